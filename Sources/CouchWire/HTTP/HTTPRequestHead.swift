/// The request line and header fields of one request ([RFC 9112 §3](https://www.rfc-editor.org/rfc/rfc9112#section-3)).
public struct HTTPRequestHead: Sendable {
    /// The method as sent, e.g. `GET` (methods are case-sensitive).
    public var method: String
    /// The raw request-target, e.g. `/db/doc%2Fx?rev=1-a`.
    public var target: String
    /// The raw (still percent-encoded) path: the target before `?` (for absolute-form, the part after the authority).
    public var path: String
    /// The raw query after `?`, nil when the target has no `?`.
    public var query: String?
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// The client's address as numeric text (`127.0.0.1`, `::1`), set by the server engine; nil when unknown.
    public var remoteAddress: String?
    /// Whether the request arrived over TLS (set by the server engine), for `Secure` cookies and `https://` links.
    public var isSecure = false

    /// Creates a head; `path` and `query` are derived from `target`.
    public init(method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders()) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        (self.path, self.query) = Self.split(target: target)
    }

    /// Whether the client wants the connection kept open: HTTP/1.1 unless `Connection: close`,
    /// HTTP/1.0 only with `Connection: keep-alive` ([RFC 9112 §9.3](https://www.rfc-editor.org/rfc/rfc9112#section-9.3)).
    public var keepAlive: Bool {
        if headers.containsToken("close", in: "Connection") { return false }
        if version.isAtLeast1_1 { return true }
        return headers.containsToken("keep-alive", in: "Connection")
    }

    /// True for `HEAD`, whose response carries no body.
    public var isHEAD: Bool { method == "HEAD" }

    /// True when the client sent `Expect: 100-continue` on HTTP/1.1.
    var expectsContinue: Bool {
        version.isAtLeast1_1 && headers.containsToken("100-continue", in: "Expect")
    }

    private static func split(target: String) -> (path: String, query: String?) {
        var pathPart = Substring(target)
        var query: String?
        if let mark = target.firstIndex(of: "?") {
            pathPart = target[..<mark]
            query = String(target[target.index(after: mark)...])
        }
        // Absolute-form (`http://host/path`): the path starts at the first '/' after the authority.
        if let scheme = pathPart.firstRange(of: "://"), !pathPart.hasPrefix("/") {
            let afterAuthority = pathPart[scheme.upperBound...]
            pathPart = afterAuthority.firstIndex(of: "/").map { afterAuthority[$0...] } ?? "/"
        }
        return (String(pathPart), query)
    }
}
