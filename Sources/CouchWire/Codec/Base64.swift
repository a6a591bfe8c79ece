/// Standard base64 with padding ([RFC 4648 §4](https://www.rfc-editor.org/rfc/rfc4648#section-4)), as used
/// for inline attachment `data` and `md5-…` digests.
///
/// Decoding follows CouchDB, which uses Erlang's `base64:decode/1`: ASCII whitespace (space, tab, CR, LF)
/// anywhere is skipped; any other byte outside the alphabet, a `=` before the end, or a length (without
/// whitespace) that is not a multiple of four is an error. Like Erlang, unused low bits in the last
/// quantum need not be zero.
public enum Base64 {
    static let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Marks in ``decodeTable`` for bytes that are not alphabet characters.
    static let invalid: UInt8 = 0xFF
    static let whitespace: UInt8 = 0xFE
    static let padding: UInt8 = 0xFD

    /// Byte → 6-bit value, or one of the marks above.
    static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: invalid, count: 256)
        for (value, byte) in UnsafeBufferPointer(start: alphabet.utf8Start, count: 64).enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        for byte in [0x20, 0x09, 0x0A, 0x0D] { table[byte] = whitespace }
        table[Int(UInt8(ascii: "="))] = padding
        return table
    }()

    /// The encoded length of `count` bytes, padding included.
    public static func encodedCount(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Appends the padded base64 text of `bytes` to `output`.
    ///
    /// Room is reserved at least doubling the capacity: `reserveCapacity` allocates exactly what it is asked for,
    /// so reserving `count + needed` on every call made a stream of small pieces (`Base64Encoder` fed byte by
    /// byte) reallocate and copy the whole output each time, quadratic in its length.
    public static func encode(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        let needed = output.count + encodedCount(bytes.count)
        if needed > output.capacity { output.reserveCapacity(max(needed, 2 * output.capacity)) }
        let table = alphabet.utf8Start
        let whole = bytes.count - bytes.count % 3
        var i = 0
        while i < whole {
            let group = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            output.append(table[Int(group >> 18)])
            output.append(table[Int(group >> 12 & 0x3F)])
            output.append(table[Int(group >> 6 & 0x3F)])
            output.append(table[Int(group & 0x3F)])
            i += 3
        }
        switch bytes.count - whole {
        case 1:
            let group = UInt32(bytes[i]) << 16
            output.append(table[Int(group >> 18)])
            output.append(table[Int(group >> 12 & 0x3F)])
            output.append(UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        case 2:
            let group = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            output.append(table[Int(group >> 18)])
            output.append(table[Int(group >> 12 & 0x3F)])
            output.append(table[Int(group >> 6 & 0x3F)])
            output.append(UInt8(ascii: "="))
        default:
            break
        }
    }

    /// Appends the padded base64 text of `bytes` to `output`.
    public static func encode(_ bytes: [UInt8], into output: inout [UInt8]) {
        bytes.withUnsafeBytes { encode($0, into: &output) }
    }

    /// The padded base64 text of `bytes`.
    public static func encodedString(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        encode(bytes, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes padded base64 text.
    ///
    /// - Parameter text: The encoded bytes; ASCII whitespace anywhere is ignored.
    /// - Returns: The decoded bytes, or nil for a byte outside the alphabet, misplaced or missing `=`
    ///   padding, or a length that is not a multiple of four.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        if let result = text.withContiguousStorageIfAvailable({ decode(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(text).withUnsafeBytes { decode($0) }
    }

    /// Decodes padded base64 text from a string's UTF-8; see ``decode(_:)-(Collection<UInt8>)``.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes padded base64 text from raw bytes; see ``decode(_:)-(Collection<UInt8>)``.
    public static func decode(_ text: UnsafeRawBufferPointer) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.count / 4 * 3)
        return decodeTable.withUnsafeBufferPointer { table -> [UInt8]? in
            var group: UInt32 = 0
            var filled = 0  // characters in `group`, 0...3
            var paddingSeen = 0
            for byte in text {
                let value = table[Int(byte)]
                if value < 64 {
                    guard paddingSeen == 0 else { return nil }  // data after `=`
                    group = group << 6 | UInt32(value)
                    filled += 1
                    if filled == 4 {
                        output.append(UInt8(truncatingIfNeeded: group >> 16))
                        output.append(UInt8(truncatingIfNeeded: group >> 8))
                        output.append(UInt8(truncatingIfNeeded: group))
                        group = 0
                        filled = 0
                    }
                } else if value == whitespace {
                    continue
                } else if value == padding {
                    // `=` may only complete a quantum holding two or three characters.
                    paddingSeen += 1
                    guard filled + paddingSeen <= 4, filled >= 2 else { return nil }
                } else {
                    return nil
                }
            }
            switch (filled, paddingSeen) {
            case (0, 0):
                return output
            case (2, 2):
                output.append(UInt8(truncatingIfNeeded: group >> 4))
                return output
            case (3, 1):
                output.append(UInt8(truncatingIfNeeded: group >> 10))
                output.append(UInt8(truncatingIfNeeded: group >> 2))
                return output
            default:
                return nil  // unpadded or truncated final quantum
            }
        }
    }
}
