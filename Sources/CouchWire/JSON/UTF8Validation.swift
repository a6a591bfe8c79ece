/// Well-formedness checks for UTF-8 (Unicode 15, table 3-7), used to locate the offending byte once
/// the standard library has said a string is invalid.
enum UTF8Validation {
    /// The offset of the first byte that starts an ill-formed sequence, or nil when all of `bytes` is UTF-8.
    static func firstInvalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        let count = bytes.count
        var i = 0
        while i < count {
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                // Skip further ASCII eight bytes at a time.
                if let base = bytes.baseAddress {
                    while i + 8 <= count
                        && base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0
                    {
                        i += 8
                    }
                }
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                low = 0xA0  // no overlongs
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                high = 0x9F  // no UTF-16 surrogates
            case 0xF0:
                length = 4
                low = 0x90  // no overlongs
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                high = 0x8F  // nothing above U+10FFFF
            default: return i
            }
            guard i + length <= count else { return i }
            let second = bytes[i + 1]
            guard second >= low && second <= high else { return i }
            for k in 2..<max(length, 2) where bytes[i + k] & 0xC0 != 0x80 { return i }
            i += length
        }
        return nil
    }

    /// Whether all of `bytes` is well-formed UTF-8.
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool { firstInvalidOffset(bytes) == nil }
}
