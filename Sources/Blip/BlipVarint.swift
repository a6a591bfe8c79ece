/// Unsigned LEB128 varints, as BLIP writes message numbers, flags and the properties length.
public enum BlipVarint {
    /// Appends `value`, seven bits a byte, low bits first.
    public static func append(_ value: UInt64, to output: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            output.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        output.append(UInt8(rest))
    }

    /// The encoding of `value`.
    public static func encode(_ value: UInt64) -> [UInt8] {
        var output: [UInt8] = []
        append(value, to: &output)
        return output
    }

    /// The outcome of reading a varint.
    public enum Read: Sendable, Equatable {
        /// The value and the bytes it took.
        case value(UInt64, length: Int)
        /// The input ends inside the varint.
        case truncated
        /// Longer than ten bytes, or more than 64 bits.
        case overflow
    }

    /// Reads a varint at the start of `bytes`.
    public static func read(_ bytes: some Collection<UInt8>) -> Read {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var length = 0
        for byte in bytes {
            length += 1
            let low = UInt64(byte & 0x7F)
            // The tenth byte holds only the 64th bit.
            if length == BlipLimits.maxVarintBytes && byte > 1 { return .overflow }
            value |= low << shift
            if byte & 0x80 == 0 { return .value(value, length: length) }
            if length == BlipLimits.maxVarintBytes { return .overflow }
            shift += 7
        }
        return .truncated
    }
}
