/// Why the request parser or chunked decoder refused the bytes it was given. Every case ends the connection.
public enum HTTPParseError: Error, Sendable, Equatable {
    /// The request line exceeds `HTTPLimits.maxRequestLineBytes` (414).
    case requestLineTooLong
    /// The header block exceeds `HTTPLimits.maxHeaderBlockBytes` (431).
    case headerBlockTooLarge
    /// More than `HTTPLimits.maxHeaderCount` header fields (431).
    case tooManyHeaders
    /// Content-Length larger than `HTTPLimits.maxContentLengthDigits` digits (413).
    case contentLengthTooLarge
    /// A major version other than 1 (505).
    case unsupportedVersion
    /// Any other syntax or framing violation, with a reason for the 400 body.
    case malformed(String)
}
