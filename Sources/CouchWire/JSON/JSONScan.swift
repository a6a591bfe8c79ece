/// Byte scanning shared by the parser and the serializer.
enum JSONScan {
    /// The offset of the first `"`, `\` or control byte at or after `start` (or `bytes.count`), and whether
    /// every byte before it is ASCII.
    @inline(__always)
    static func plainRun(_ bytes: UnsafeRawBufferPointer, from start: Int) -> (end: Int, isASCII: Bool) {
        var i = start
        let count = bytes.count
        let highs: UInt64 = 0x8080_8080_8080_8080
        var seen: UInt64 = 0
        // Eight bytes at a time: a lane is interesting when it is `"` (0x22), `\` (0x5C) or below 0x20.
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            while i + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let hits =
                    ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
                if hits & highs != 0 { break }
                seen |= word
                i += 8
            }
        }
        while i < count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            seen |= UInt64(byte)
            i += 1
        }
        return (i, seen & highs == 0)
    }
}
