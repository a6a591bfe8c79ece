import CouchServer
import Foundation

/// The command line of `couchlite receive`: its own flags, plus every server option of `serve` (data dir,
/// admin, log level, …) from the same table and the same `COUCHLITE_*` environment variables.
package struct ReceiveOptions: Sendable {
    package var server = Options()
    /// nil: the best LAN address (`LANAddresses`), else loopback.
    package var bind: String?
    package var out = "./PhotoDrop"
    package var database = "photodrop"
    package var ttl = Duration.seconds(15 * 60)
    package var once = false
    package var qrPNG: String?
    /// Whether the apps' URL (and so the QR code with `--qr app`) carries the certificate fingerprint
    /// (`#sha256=…`) for the sender to pin.
    package var qrPin = false
    /// What the QR code opens (`--qr`).
    package var qr = QRTarget.phone
    package var json = false
    /// The most bytes the session's drop credentials may store (`--max-size`); nil: `defaultMaxSize` of the data
    /// dir's disk.
    package var maxSize: Int?
    /// The display name announced on the LAN (`--name`); nil: the host name.
    package var name: String?
    /// Whether the drop is announced on the LAN with DNS-SD over mDNS (off with `--no-announce`).
    package var announce = true

    /// What the QR code carries.
    package enum QRTarget: String, Sendable {
        /// The drop page with a one-time sign-in token: a phone's camera opens it signed in (`SignInTokens`).
        case phone
        /// The replication URL with the one-time credentials, for apps that scan it themselves (Couchbase Lite
        /// 1.x senders such as PhotoDrop), as before.
        case app
    }

    /// The settings before any option is read.
    package static var defaults: ReceiveOptions {
        var options = ReceiveOptions()
        // Less chatter than `serve`: one line per request would bury the progress line.
        options.server.logLevel = .warning
        return options
    }

    /// What is checked once every option is read.
    package static func check(_ options: inout ReceiveOptions) throws(OptionsError) {
        try options.server.validate()
        if options.qrPin && !options.server.tls.isOn {
            throw OptionsError("--qr-pin puts the certificate's fingerprint in the QR code: it needs --tls")
        }
    }

    /// `1000`, `500k`, `800M`, `2G`, `1T` (decimal units, as the summary prints sizes) → bytes; nil for anything
    /// else.
    package static func parseSize(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 32 else { return nil }
        var digits = Substring(text)
        var unit = 1
        if let last = digits.last, !last.isNumber {
            switch last {
            case "k", "K": unit = 1_000
            case "m", "M": unit = 1_000_000
            case "g", "G": unit = 1_000_000_000
            case "t", "T": unit = 1_000_000_000_000
            default: return nil
            }
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(digits) else {
            return nil
        }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: unit)
        return overflow ? nil : bytes
    }

    /// `--max-size`'s default: what leaves 10 % of the disk holding `path` free, and at most half of what is free
    /// now (a drop never takes the whole disk); 0 when the disk is already past 90 %.
    package static func defaultMaxSize(of path: String) -> Int {
        guard let attributes = try? FileManager.default.attributesOfFileSystem(forPath: path),
            let total = (attributes[.systemSize] as? NSNumber)?.int64Value,
            let free = (attributes[.systemFreeSize] as? NSNumber)?.int64Value
        else { return 0 }
        let room = max(0, min(free - total / 10, free / 2))
        return Int(clamping: room)
    }

    /// `90`, `90s`, `15m`, `2h`, `1h30m`, `1d` → seconds; nil for anything else.
    package static func parseDuration(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 32 else { return nil }
        if let plain = Int(text) { return plain }
        var total = 0
        var number = ""
        for character in text {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            let unit: Int
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86400
            default: return nil
            }
            guard let value = Int(number) else { return nil }
            let (product, overflow) = value.multipliedReportingOverflow(by: unit)
            guard !overflow else { return nil }
            let (sum, overflowSum) = total.addingReportingOverflow(product)
            guard !overflowSum else { return nil }
            total = sum
            number = ""
        }
        return number.isEmpty ? total : nil
    }
}
