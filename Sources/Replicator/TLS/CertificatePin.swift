import Foundation

/// A peer certificate pinned by the SHA-256 of its DER encoding: the fingerprint `couchlite serve --tls auto`
/// and `couchlite receive` print, and the `#sha256=` fragment of a receiver's QR URL carries. A pinned peer is
/// trusted because its certificate is exactly this one, so it needs no certificate authority: this is how a
/// sender trusts a self-signed receiver it has never seen.
public struct CertificatePin: Sendable, Equatable, CustomStringConvertible {
    /// The 32 bytes of the digest.
    public let digest: [UInt8]

    public init?(digest: [UInt8]) {
        guard digest.count == 32 else { return nil }
        self.digest = digest
    }

    /// Reads a fingerprint as people copy it: 64 hex digits in any case, either plain (`ab12…`) or in pairs
    /// separated by colons (`AB:12:…`, as `openssl x509 -fingerprint` prints it). Anything else (a wrong
    /// length, a stray separator, a SHA-1 fingerprint) is refused with a reason rather than guessed at.
    public static func parse(_ text: String) throws(ReplicationError) -> CertificatePin {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let bytes = Array(trimmed.utf8)
        let hex: [UInt8]
        if bytes.contains(UInt8(ascii: ":")) {
            // Colons between every pair, and nowhere else: `AB:CD:…` (95 characters).
            guard bytes.count == 95,
                stride(from: 2, to: bytes.count, by: 3).allSatisfy({ bytes[$0] == UInt8(ascii: ":") })
            else {
                throw .badRequest(
                    "A certificate pin is a SHA-256 fingerprint: 32 hex pairs separated by colons, or 64 hex digits "
                        + "(got \(quoted(trimmed)))")
            }
            hex = bytes.enumerated().filter { $0.offset % 3 != 2 }.map(\.element)
        } else {
            hex = bytes
        }
        guard hex.count == 64 else {
            throw .badRequest(
                "A certificate pin is a SHA-256 fingerprint of 64 hex digits; \(quoted(trimmed)) has "
                    + "\(hex.count)\(hex.count == 40 ? " (a SHA-1 fingerprint?)" : "")")
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        var index = 0
        while index < 64 {
            guard let high = hexValue(hex[index]), let low = hexValue(hex[index + 1]) else {
                throw .badRequest("A certificate pin has only hex digits (0-9, a-f): \(quoted(trimmed))")
            }
            digest.append(high << 4 | low)
            index += 2
        }
        return CertificatePin(uncheckedDigest: digest)
    }

    private init(uncheckedDigest: [UInt8]) { self.digest = uncheckedDigest }

    /// `AB:CD:…`, the form printed next to a receiver's URL, so a person can compare the two.
    public var description: String { Self.format(digest) }

    /// Any digest as colon-separated upper-case hex pairs (for messages naming what a peer presented).
    public static func format(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF")
        var out = ""
        for (index, byte) in digest.enumerated() {
            if index > 0 { out.append(":") }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The text as given, shortened and with control characters escaped, fit for an error message.
    private static func quoted(_ text: String) -> String {
        let shown = text.count > 100 ? String(text.prefix(100)) + "…" : text
        return "'" + shown.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : String($0) }.joined() + "'"
    }
}
