import CouchCrypto

/// The SHA-256 digest of a certificate's DER encoding: what `openssl x509 -fingerprint -sha256` prints,
/// what a receiver shows beside its QR code, and what a sender pins.
public struct TLSFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// The fingerprint of a DER-encoded certificate.
    public init(der: [UInt8]) { bytes = Digest.hash(.sha256, der) }

    /// Parses 64 hexadecimal digits, in either case, with or without a colon between pairs
    /// (`AB:CD:…` as printed for people, `abcd…` as in a `#sha256=` URL fragment), optionally after `sha256:`.
    /// - Returns: nil for anything else.
    public init?(parsing text: String) {
        var digits = Substring(text)
        if digits.lowercased().hasPrefix("sha256:") || digits.lowercased().hasPrefix("sha256=") {
            digits = digits.dropFirst(7)
        }
        let hasColons = digits.contains(":")
        let pairs: [Substring] =
            hasColons
            ? digits.split(separator: ":", omittingEmptySubsequences: false)
            : stride(from: 0, to: digits.count, by: 2).map { offset in
                let start = digits.index(digits.startIndex, offsetBy: offset)
                let end = digits.index(start, offsetBy: 2, limitedBy: digits.endIndex) ?? digits.endIndex
                return digits[start..<end]
            }
        guard pairs.count == 32 else { return nil }
        var parsed: [UInt8] = []
        parsed.reserveCapacity(32)
        for pair in pairs {
            guard pair.count == 2, pair.utf8.allSatisfy(Self.isHexDigit), let byte = UInt8(pair, radix: 16) else {
                return nil
            }
            parsed.append(byte)
        }
        bytes = parsed
    }

    /// Uppercase hexadecimal pairs joined by colons, `AB:CD:…`, for people to compare.
    public var colonHex: String { bytes.map { Self.hexPair($0, uppercase: true) }.joined(separator: ":") }

    /// Lowercase hexadecimal without separators, for URLs (`#sha256=…`) and command lines.
    public var hex: String { bytes.map { Self.hexPair($0, uppercase: false) }.joined() }

    public var description: String { colonHex }

    private static func hexPair(_ byte: UInt8, uppercase: Bool) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]], as: UTF8.self)
    }

    /// Only `[0-9a-fA-F]`: `UInt8(_:radix:)` alone would also take a sign.
    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }
}
