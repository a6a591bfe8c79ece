/// RFC 3986 percent-encoding of one URL component, for the server (paths, query strings, `Location`) and the
/// replicator (the paths and queries it builds) alike.
public enum PercentEncoding {
    /// Every byte but the unreserved characters (`A-Z a-z 0-9 - . _ ~`) and those of `alsoKeeping` (ASCII) as
    /// `%XX` with uppercase digits, as CouchDB writes them: `a/b` → `a%2Fb`.
    public static func encode(_ text: String, alsoKeeping extra: String = "") -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (byte < 0x80 && extra.utf8.contains(byte)) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// One path segment (a database name, a document id, an attachment name): `/` → `%2F`.
    public static func segment(_ text: String) -> String { encode(text) }

    /// The text of an encoded component; `+` is a space where `plusIsSpace` (query strings).
    /// - Returns: nil for a malformed escape (`%`, `%4`, `%zz`) or bytes that are not UTF-8.
    public static func decode(_ text: Substring, plusIsSpace: Bool = false) -> String? {
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) {
            return String(text)
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                out.append(high << 4 | low)
            } else if plusIsSpace && byte == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else {
                out.append(byte)
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
