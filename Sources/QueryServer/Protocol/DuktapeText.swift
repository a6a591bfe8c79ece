/// Duktape keeps strings in an extended UTF-8 in which a character outside the Basic Multilingual Plane made by
/// a script (or by `JSON.parse` of `"\ud83d\ude00"`) is two 3-byte surrogate halves (CESU-8), which is not
/// UTF-8 and which the server's strict JSON parser refuses. These two passes translate at the boundary.
public enum DuktapeText {
    /// Request JSON for the engine: every 4-byte UTF-8 sequence (only possible inside a JSON string) becomes
    /// its `\uD8xx\uDCxx` escape, so the engine builds the surrogate pair JavaScript expects.
    public static func forEngine(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.contains(where: { $0 >= 0xF0 }) else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 64)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= 0xF0, byte <= 0xF4, index + 3 < bytes.count {
                let scalar =
                    (UInt32(byte & 0x07) << 18) | (UInt32(bytes[index + 1] & 0x3F) << 12)
                    | (UInt32(bytes[index + 2] & 0x3F) << 6) | UInt32(bytes[index + 3] & 0x3F)
                let offset = scalar - 0x10000
                appendEscape(0xD800 + (offset >> 10), to: &out)
                appendEscape(0xDC00 + (offset & 0x3FF), to: &out)
                index += 4
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }

    /// Engine output as UTF-8: a surrogate pair (two 3-byte sequences `ED A0–AF xx`, `ED B0–BF xx`) becomes
    /// the 4-byte sequence of its character, and a lone surrogate becomes U+FFFD, as `JSON.stringify`'s
    /// well-formed output would escape it.
    public static func fromEngine(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        guard bytes.contains(0xED) else { return Array(bytes) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == 0xED, index + 2 < bytes.count, bytes[index + 1] >= 0xA0 else {
                out.append(byte)
                index += 1
                continue
            }
            let high = 0xD000 | (UInt32(bytes[index + 1] & 0x3F) << 6) | UInt32(bytes[index + 2] & 0x3F)
            if high < 0xDC00, index + 5 < bytes.count, bytes[index + 3] == 0xED, bytes[index + 4] >= 0xB0 {
                let low = 0xD000 | (UInt32(bytes[index + 4] & 0x3F) << 6) | UInt32(bytes[index + 5] & 0x3F)
                let scalar = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                out += [
                    UInt8(0xF0 | (scalar >> 18)), UInt8(0x80 | ((scalar >> 12) & 0x3F)),
                    UInt8(0x80 | ((scalar >> 6) & 0x3F)), UInt8(0x80 | (scalar & 0x3F)),
                ]
                index += 6
            } else {
                out += [0xEF, 0xBF, 0xBD]
                index += 3
            }
        }
        return out
    }

    private static func appendEscape(_ unit: UInt32, to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out += [UInt8(ascii: "\\"), UInt8(ascii: "u")]
        for shift in [12, 8, 4, 0] { out.append(hex[Int((unit >> UInt32(shift)) & 0xF)]) }
    }
}
