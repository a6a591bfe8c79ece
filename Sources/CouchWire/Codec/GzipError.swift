/// Why gzip data could not be decoded.
public enum GzipError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not valid gzip (bad header, bad deflate data, or a CRC or length mismatch).
    case corrupt
    /// The input ended inside a gzip member.
    case truncated
    /// Decoding would produce more than `limit` bytes (a zip bomb, or simply too large).
    case limitExceeded(limit: Int)
    /// zlib could not start (out of memory); carries zlib's return code.
    case unavailable(code: Int32)

    public var description: String {
        switch self {
        case .corrupt: "invalid gzip data"
        case .truncated: "gzip data truncated"
        case .limitExceeded(let limit): "gzip data expands beyond \(limit) bytes"
        case .unavailable(let code): "zlib unavailable (code \(code))"
        }
    }
}
