/// Why a multipart body or its `Content-Type` was refused.
///
/// The set is closed, so parsers throw it as a typed error. The server answers every case with
/// 400 (`bad_request`), except `notMultipart`, which is a 415.
public enum MultipartError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The media type is not `multipart/*`.
    case notMultipart(mediaType: String)
    /// The `Content-Type` has no `boundary` parameter.
    case missingBoundary
    /// The boundary is empty, longer than ``MultipartLimits/maxBoundaryLength`` or has characters
    /// RFC 2046 does not allow.
    case invalidBoundary
    /// More than ``MultipartLimits/maxPreambleLength`` bytes came before the first boundary
    /// (usually: the body uses a different boundary than its `Content-Type` announced).
    case preambleTooLarge
    /// A boundary delimiter was followed by something other than `--`, padding and CRLF.
    case malformedDelimiter
    /// A part's header block exceeded ``MultipartLimits/maxPartHeaderBlockLength``.
    case headerBlockTooLarge
    /// A part header line has no colon, an empty name, or a bare CR or LF.
    case malformedHeader
    /// The body has more than ``MultipartLimits/maxParts`` parts.
    case tooManyParts
    /// The body ended before the closing boundary `--B--`.
    case truncated
    /// The consumer of a ``MultipartParser/parse(borrowing:_:)`` event threw; the parser accepts no more input.
    case aborted

    public var description: String {
        switch self {
        case .notMultipart(let mediaType): "not a multipart media type: \(mediaType)"
        case .missingBoundary: "multipart content type has no boundary"
        case .invalidBoundary: "invalid multipart boundary"
        case .preambleTooLarge: "multipart boundary not found"
        case .malformedDelimiter: "malformed multipart boundary line"
        case .headerBlockTooLarge: "multipart part headers too large"
        case .malformedHeader: "malformed multipart part header"
        case .tooManyParts: "too many multipart parts"
        case .truncated: "multipart body truncated before its closing boundary"
        case .aborted: "multipart body abandoned by its consumer"
        }
    }
}
