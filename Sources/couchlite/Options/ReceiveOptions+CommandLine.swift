import CouchServer
import Foundation
import PhotoDrop

/// `couchlite receive`'s options: its own flags, plus every server option of `serve`.
extension ReceiveOptions {
    typealias Spec = OptionSpec<ReceiveOptions>

    static let table: [Spec] = [
        .text(
            "--out", environment: "COUCHLITE_RECEIVE_OUT", valueName: "DIR",
            help: "folder the photos are saved in, default ./PhotoDrop", needs: "a directory"
        ) { $0.out = $1 },
        Spec(
            flag: "--db", environment: "COUCHLITE_RECEIVE_DB", valueName: "NAME",
            help: "drop database (created if missing), default photodrop"
        ) { o, v throws(OptionsError) in
            do {
                try DatabaseHandlers.validateDatabaseName(v)
            } catch {
                throw OptionsError("--db: '\(v)' is not a valid database name")
            }
            guard !v.hasPrefix("_") else { throw OptionsError("--db cannot be a system database") }
            o.database = v
        },
        .text(
            "--bind", environment: "COUCHLITE_BIND", valueName: "ADDRESS",
            help: "address to listen on, default the machine's LAN address (loopback if none)", needs: "an address"
        ) { $0.bind = $1 },
        Spec(
            flag: "--ttl", environment: "COUCHLITE_RECEIVE_TTL", valueName: "DURATION",
            help: "how long the one-time credentials live (90s, 15m, 1h30m), default 15m"
        ) { o, v throws(OptionsError) in
            guard let seconds = ReceiveOptions.parseDuration(v), seconds > 0 else {
                throw OptionsError("--ttl must be a duration like 30s, 15m or 2h, got '\(v)'")
            }
            o.ttl = .seconds(seconds)
        },
        Spec(
            flag: "--max-size", environment: "COUCHLITE_RECEIVE_MAX_SIZE", valueName: "SIZE",
            help:
                "most the senders may store (500M, 2G), default: leave 10 % of the disk free, at most half the free space"
        ) { o, v throws(OptionsError) in
            guard let bytes = ReceiveOptions.parseSize(v) else {
                throw OptionsError("--max-size must be a size like 500M or 2G, got '\(v)'")
            }
            o.maxSize = bytes
        },
        .toggle(
            "--once", environment: "COUCHLITE_RECEIVE_ONCE",
            help: "end when the first push is complete (its checkpoint written, then quiet)"
        ) { $0.once = $1 },
        .text(
            "--qr-png", environment: "COUCHLITE_RECEIVE_QR_PNG", valueName: "FILE",
            help: "also write the QR code as a PNG image", needs: "a file name"
        ) { $0.qrPNG = $1 },
        .toggle(
            "--qr-pin", environment: "COUCHLITE_RECEIVE_QR_PIN",
            help: "with --tls: add the certificate's #sha256=FINGERPRINT to the apps' URL (couchlite push pins it)"
        ) { $0.qrPin = $1 },
        Spec(
            flag: "--qr", environment: "COUCHLITE_RECEIVE_QR", valueName: "phone|app",
            help:
                "what the QR code opens: phone (the drop page, signed in by a one-time token; default) or app (the URL for apps)"
        ) { o, v throws(OptionsError) in
            guard let target = ReceiveOptions.QRTarget(rawValue: v) else {
                throw OptionsError("--qr must be phone or app, got '\(v)'")
            }
            o.qr = target
        },
        Spec(
            flag: "--name", environment: "COUCHLITE_RECEIVE_NAME", valueName: "TEXT",
            help: "display name announced on the LAN (couchlite peers), default the host name"
        ) { o, v throws(OptionsError) in
            guard !v.isEmpty, v.utf8.count <= 63 else { throw OptionsError("--name must be 1 to 63 bytes, got '\(v)'") }
            o.name = v
        },
        .toggle(
            "--no-announce", environment: "COUCHLITE_RECEIVE_NO_ANNOUNCE",
            help: "do not announce the drop on the LAN (DNS-SD over mDNS; the URL and QR code still work)"
        ) { $0.announce = !$1 },
        .toggle(
            "--json", environment: "COUCHLITE_RECEIVE_JSON",
            help:
                "print one JSON line {url,user,expires,db,out,browser,code,signin_url,qr_url,app_url} instead of the text and QR code"
        ) { $0.json = $1 },
    ]

    /// `serve`'s options that mean the same here (`--bind` differs in its default and help; `--announce` is on).
    static let commandLine = OptionTable(
        summary: """
            usage: couchlite receive [options]

            Receive photos: serve a drop database with one-time credentials, print its URL and QR code, and save
            every photo pushed into it (CouchDB replicator, PouchDB, Couchbase Lite 1.x) in a folder.
            """,
        specs: table
            // receive announces itself unless --no-announce: serve's --announce does not apply.
            + Options.table.filter { $0.flag != "--bind" && $0.flag != "--announce" }.map { spec in
                spec.lifted(
                    \ReceiveOptions.server,
                    help: spec.flag == "--log-level" ? "error, warning, info or debug; default warning here" : nil)
            })

    static var usage: String { commandLine.usage }

    /// Parses the environment first, then the arguments, which win.
    /// - Returns: nil when `--help` was asked for.
    static func parse(arguments: [String], environment: [String: String]) throws(OptionsError) -> ReceiveOptions? {
        var options = defaults
        guard try commandLine.parse(arguments, environment: environment, into: &options) else { return nil }
        try check(&options)
        return options
    }
}
