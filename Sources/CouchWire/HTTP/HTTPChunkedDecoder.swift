/// A pure, incremental decoder for the chunked transfer coding
/// ([RFC 9112 §7.1](https://www.rfc-editor.org/rfc/rfc9112#section-7.1)), free of I/O.
///
/// It rejects chunk sizes over `HTTPLimits.maxChunkSizeDigits` hex digits, bare CR or LF, missing CRLF after
/// chunk data, and over-long extensions or trailers. Extensions and trailer fields are read and discarded.
public struct HTTPChunkedDecoder: Sendable {
    /// The outcome of one `decode` call.
    public enum Step: Sendable, Equatable {
        /// Every input byte was consumed as framing; no body bytes yet.
        case needMoreData
        /// Body bytes at this range of the input; everything before `upperBound` is consumed.
        case data(Range<Int>)
        /// The body ended (last chunk and trailers); `consumed` bytes of the input belong to it.
        case end(consumed: Int)
    }

    private enum State: Sendable, Equatable {
        case size(digits: Int, value: UInt64)
        case sizeExtension(bytes: Int, value: UInt64)
        case sizeLF(value: UInt64)
        case data(remaining: UInt64)
        case dataCR
        case dataLF
        case trailerLineStart
        case trailerLine
        case trailerLF
        case finalLF
        case done
    }

    private var state = State.size(digits: 0, value: 0)
    private var trailerBytes = 0

    public init() {}

    /// True once the terminating chunk and trailers have been decoded.
    public var isFinished: Bool { state == .done }

    /// Decodes framing from `bytes` until body bytes, the end, or the end of input.
    /// - Returns: see `Step`; call again with the bytes after the returned range to continue.
    /// - Throws: `.malformed` for bad framing, `.headerBlockTooLarge` for oversized trailers.
    public mutating func decode(_ bytes: UnsafeRawBufferPointer) throws(HTTPParseError) -> Step {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch state {
            case .size(let digits, let value):
                if let nibble = Self.hexValue(byte) {
                    guard digits < HTTPLimits.maxChunkSizeDigits else {
                        throw .malformed("Chunk size longer than \(HTTPLimits.maxChunkSizeDigits) hex digits.")
                    }
                    state = .size(digits: digits + 1, value: value << 4 | UInt64(nibble))
                } else if digits == 0 {
                    throw .malformed("Invalid chunk size.")
                } else if byte == 0x3B || byte == 0x20 || byte == 0x09 {
                    state = .sizeExtension(bytes: 1, value: value)
                } else if byte == 0x0D {
                    state = .sizeLF(value: value)
                } else {
                    throw .malformed("Invalid chunk size.")
                }
            case .sizeExtension(let count, let value):
                if byte == 0x0D {
                    state = .sizeLF(value: value)
                } else if byte == 0x09 || (byte >= 0x20 && byte != 0x7F) {
                    guard count < HTTPLimits.maxChunkExtensionBytes else {
                        throw .malformed("Chunk extension too long.")
                    }
                    state = .sizeExtension(bytes: count + 1, value: value)
                } else {
                    throw .malformed("Invalid character in chunk extension.")
                }
            case .sizeLF(let value):
                guard byte == 0x0A else { throw .malformed("Chunk size line must end in CRLF.") }
                state = value == 0 ? .trailerLineStart : .data(remaining: value)
            case .data(let remaining):
                let available = UInt64(bytes.count - index)
                let take = min(available, remaining)
                state = take == remaining ? .dataCR : .data(remaining: remaining - take)
                return .data(index..<(index + Int(take)))
            case .dataCR:
                guard byte == 0x0D else { throw .malformed("Chunk data must be followed by CRLF.") }
                state = .dataLF
            case .dataLF:
                guard byte == 0x0A else { throw .malformed("Chunk data must be followed by CRLF.") }
                state = .size(digits: 0, value: 0)
            case .trailerLineStart:
                if byte == 0x0D {
                    state = .finalLF
                } else {
                    try countTrailerByte(byte)
                    state = .trailerLine
                }
            case .trailerLine:
                if byte == 0x0D {
                    state = .trailerLF
                } else {
                    try countTrailerByte(byte)
                }
            case .trailerLF:
                guard byte == 0x0A else { throw .malformed("Trailer line must end in CRLF.") }
                trailerBytes += 2
                state = .trailerLineStart
            case .finalLF:
                guard byte == 0x0A else { throw .malformed("Chunked body must end in CRLF.") }
                state = .done
                return .end(consumed: index + 1)
            case .done:
                return .end(consumed: index)
            }
            index += 1
        }
        return state == .done ? .end(consumed: index) : .needMoreData
    }

    private mutating func countTrailerByte(_ byte: UInt8) throws(HTTPParseError) {
        guard byte != 0x0A else { throw .malformed("Trailer line ends in a bare LF.") }
        trailerBytes += 1
        if trailerBytes > HTTPLimits.maxHeaderBlockBytes { throw .headerBlockTooLarge }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
