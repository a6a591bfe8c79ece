/// How a request body is delimited ([RFC 9112 §6.3](https://www.rfc-editor.org/rfc/rfc9112#section-6.3)).
public enum HTTPBodyFraming: Sendable, Equatable {
    /// No body.
    case none
    /// Exactly this many bytes follow the head.
    case length(Int)
    /// Chunked transfer coding.
    case chunked

    /// Derives the framing of a request, refusing anything that could desynchronise us from a proxy
    /// (request smuggling): Content-Length together with Transfer-Encoding, Content-Lengths that disagree,
    /// any transfer coding other than a lone `chunked`, and Transfer-Encoding on HTTP/1.0.
    /// - Throws: `.malformed` for those cases, `.contentLengthTooLarge` for a Content-Length beyond 18 digits.
    public init(of head: HTTPRequestHead) throws(HTTPParseError) {
        let headers = head.headers
        let hasTransferEncoding = headers.contains("Transfer-Encoding")
        let hasContentLength = headers.contains("Content-Length")
        if hasTransferEncoding {
            guard !hasContentLength else {
                throw .malformed("Content-Length and Transfer-Encoding together are not allowed.")
            }
            guard head.version.isAtLeast1_1 else { throw .malformed("Transfer-Encoding is not allowed in HTTP/1.0.") }
            let codings = headers.tokens("Transfer-Encoding")
            guard codings.count == 1, let only = codings.first, HTTPHeaders.namesEqual(only, "chunked") else {
                throw .malformed("Only Transfer-Encoding: chunked is supported.")
            }
            self = .chunked
            return
        }
        guard hasContentLength else {
            self = .none
            return
        }
        // Every element of every Content-Length field must be the same decimal number (RFC 9110 §8.6).
        var length: Int?
        for value in headers.values("Content-Length") {
            let elements = value.split(separator: ",", omittingEmptySubsequences: false)
            for element in elements {
                let digits = element.trimmingSpacesAndTabs()
                guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                    throw .malformed("Invalid Content-Length.")
                }
                let significant = digits.drop { $0 == "0" }
                guard significant.utf8.count <= HTTPLimits.maxContentLengthDigits else { throw .contentLengthTooLarge }
                let parsed = Int(significant) ?? 0
                if let previous = length, previous != parsed {
                    throw .malformed("Conflicting Content-Length values.")
                }
                length = parsed
            }
        }
        self = .length(length ?? 0)
    }
}
