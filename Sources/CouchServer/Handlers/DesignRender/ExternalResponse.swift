import CouchWire
import QueryServer

/// A show, list or update function's response object (`chttpd_external:parse_external_response`) checked before
/// any of it reaches the client: `code` (100–599), `json`, `body`, `base64`, `headers`, `stop`; anything else is
/// CouchDB's 500 `external_response_error`.
///
/// The output is a design document author's content served from couchlite's origin, so it is sandboxed as stored
/// attachments are (`Content-Security-Policy: sandbox`, `nosniff`: no script, no cookie, no same-origin access
/// when a browser opens it), and the headers it may set are checked: a name must be an HTTP token and a value may
/// hold no control character (no CR/LF response splitting), framing headers are the engine's, and `Set-Cookie`,
/// CORS and sandbox headers are dropped (a show could otherwise plant a session cookie for whoever opens it).
struct ExternalResponse {
    var status = 200
    var body: [UInt8] = []
    var json: JSON?
    var contentType = "application/json"
    var headers: [(name: String, value: String)] = []

    /// Headers a design function may not set (lower case): framing, cookies, CORS, and the sandbox (the reply's
    /// headers replace by name, so a function's own policy would replace it rather than narrow it).
    static let refusedHeaders: Set<String> = [
        "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
        "set-cookie", "set-cookie2", "access-control-allow-origin", "access-control-allow-credentials",
        "access-control-allow-headers", "access-control-allow-methods", "access-control-expose-headers",
        "content-security-policy", "x-content-type-options",
    ]

    init(status: Int = 200) { self.status = status }

    init(_ response: RenderedResponse, status: Int = 200) throws(CouchError) {
        self.status = status
        try apply(response.object)
    }

    /// Folds `object`'s members in, in order (a later `code` wins, as in CouchDB).
    mutating func apply(_ object: JSONObject) throws(CouchError) {
        for (key, value) in object {
            switch key {
            case "code":
                guard let code = value.intValue, (100...599).contains(code) else { throw Self.invalid(key, value) }
                status = code
            case "stop": break
            case "json":
                json = value
                contentType = "application/json"
            case "body":
                guard let text = value.stringValue else { throw Self.invalid(key, value) }
                body = Array(text.utf8)
                contentType = "text/html; charset=utf-8"
            case "base64":
                guard let text = value.stringValue, let bytes = Base64.decode(text) else {
                    throw Self.invalid(key, value)
                }
                body = bytes
                contentType = "application/binary"
            case "headers":
                guard let fields = value.objectValue else { throw Self.invalid(key, value) }
                headers = []
                try addHeaders(fields)
            default:
                throw Self.invalid(key, value)
            }
        }
    }

    /// Adds a list's `start({headers})` or a response's headers, checked.
    mutating func addHeaders(_ fields: JSONObject) throws(CouchError) {
        for (name, value) in fields {
            let text: String
            switch value {
            case .string(let string): text = string
            case .number: text = value.serializedString
            default: throw Self.invalidHeader(name)
            }
            guard Self.isToken(name), !text.unicodeScalars.contains(where: Self.isForbiddenInValue) else {
                throw Self.invalidHeader(name)
            }
            guard !Self.refusedHeaders.contains(name.lowercased()) else { continue }
            headers.removeAll { $0.name.lowercased() == name.lowercased() }
            headers.append((name, text))
        }
    }

    /// The headers to send: the function's, its content type unless it set one, and the sandbox.
    var httpHeaders: HTTPHeaders {
        var result = HTTPHeaders()
        result.set("Content-Security-Policy", "sandbox")
        result.set("X-Content-Type-Options", "nosniff")
        if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            result.set("Content-Type", contentType)
        }
        for (name, value) in headers { result.set(name, value) }
        return result
    }

    /// The whole response, with `extra` headers set over the function's.
    func response(adding extra: [(String, String)] = []) -> Response {
        var headers = httpHeaders
        for (name, value) in extra { headers.set(name, value) }
        if let json {
            return .json(Response.Status(status), json, headers: headers)
        } else {
            return .bytes(Response.Status(status), body, headers: headers)
        }
    }

    private static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
    }

    private static func isForbiddenInValue(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || scalar.value == 0x7F
    }

    private static func invalid(_ key: String, _ value: JSON) -> CouchError {
        .designFunction(
            status: 500, error: "external_response_error",
            reason: "Invalid data from external server: {\(key), \(value.serializedString.prefix(200))}")
    }

    private static func invalidHeader(_ name: String) -> CouchError {
        .designFunction(
            status: 500, error: "external_response_error",
            reason: "Invalid header from a design function: \(name.debugDescription.prefix(200))")
    }
}
