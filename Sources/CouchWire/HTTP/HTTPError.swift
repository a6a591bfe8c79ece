/// Errors of the HTTP engine as seen by handlers, each with a CouchDB-style status, `error` and `reason`.
public enum HTTPError: Error, Sendable, Equatable {
    /// Malformed request syntax or framing (400 `bad_request`).
    case malformed(String)
    /// The request line is too long (414).
    case uriTooLong
    /// The header block is too large or has too many fields (431).
    case headerFieldsTooLarge(String)
    /// The body is larger than the handler's limit or Content-Length is absurd (413 `too_large`).
    case payloadTooLarge
    /// An HTTP major version other than 1 (505).
    case versionNotSupported
    /// The request head did not arrive within the header timeout (408).
    case requestTimeout
    /// A body read or a response write stalled longer than its timeout (408 for reads).
    case timeout
    /// The peer closed or reset the connection; nothing more can be sent.
    case clientGone
    /// The handler used the response writer wrongly (e.g. more bytes than Content-Length); the connection closes (500).
    case responseMisuse(String)
    /// The server refuses the connection (503), e.g. over the connection cap.
    case serviceUnavailable

    /// The HTTP status for this error.
    public var status: Int {
        switch self {
        case .malformed, .clientGone: 400
        case .uriTooLong: 414
        case .headerFieldsTooLarge: 431
        case .payloadTooLarge: 413
        case .versionNotSupported: 505
        case .requestTimeout, .timeout: 408
        case .responseMisuse: 500
        case .serviceUnavailable: 503
        }
    }

    /// The CouchDB `error` field.
    public var errorName: String {
        switch self {
        case .malformed, .clientGone: "bad_request"
        case .uriTooLong: "uri_too_long"
        case .headerFieldsTooLarge: "header_fields_too_large"
        case .payloadTooLarge: "too_large"
        case .versionNotSupported: "http_version_not_supported"
        case .requestTimeout, .timeout: "request_timeout"
        case .responseMisuse: "unknown_error"
        case .serviceUnavailable: "service_unavailable"
        }
    }

    /// The CouchDB `reason` field.
    public var reason: String {
        switch self {
        case .malformed(let reason): reason
        case .uriTooLong: "Request line longer than \(HTTPLimits.maxRequestLineBytes) bytes."
        case .headerFieldsTooLarge(let reason): reason
        case .payloadTooLarge: "the request entity is too large"
        case .versionNotSupported: "Only HTTP/1.0 and HTTP/1.1 are supported."
        case .requestTimeout: "The request head did not arrive in time."
        case .timeout: "The connection stalled."
        case .clientGone: "The client closed the connection."
        case .responseMisuse(let reason): reason
        case .serviceUnavailable: "Too many open connections."
        }
    }

    /// Maps a parser error to the error a handler or the engine answers with.
    public init(_ parseError: HTTPParseError) {
        switch parseError {
        case .requestLineTooLong: self = .uriTooLong
        case .headerBlockTooLarge:
            self = .headerFieldsTooLarge("Header block larger than \(HTTPLimits.maxHeaderBlockBytes) bytes.")
        case .tooManyHeaders: self = .headerFieldsTooLarge("More than \(HTTPLimits.maxHeaderCount) header fields.")
        case .contentLengthTooLarge: self = .payloadTooLarge
        case .unsupportedVersion: self = .versionNotSupported
        case .malformed(let reason): self = .malformed(reason)
        }
    }

    /// `{"error":"…","reason":"…"}` plus a newline, as CouchDB writes error bodies.
    public var jsonBody: [UInt8] {
        Array("{\"error\":\"\(Self.escape(errorName))\",\"reason\":\"\(Self.escape(reason))\"}\n".utf8)
    }

    /// Escapes a string for a JSON string literal (quotes, backslashes, control characters).
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
