import CouchWire

/// What a handler answers: a status, headers, and a body that is bytes (JSON unless the headers say otherwise) or a
/// writer that streams (feeds, attachments, multipart). Handlers build one and return it; `Reply.send` writes it to
/// the connection, the one place that does, adding CouchDB's default headers, CORS and a refreshed session cookie.
/// A test calls the router and reads the value, with no socket and no parser (`App.respond`).
package struct Response {
    package var status: Status
    /// The handler's headers; `Content-Type: application/json` and `Cache-Control: must-revalidate` are added
    /// unless set here.
    package var headers: HTTPHeaders
    package var body: Body

    package enum Body {
        /// The whole body, sent with its `Content-Length`.
        case bytes([UInt8])
        /// Written as it is produced: chunked on HTTP/1.1 unless `contentLength` is known. The head goes out with
        /// the first bytes (or at the end), so a stream that fails before writing anything is answered as the error
        /// it threw.
        case stream(contentLength: Int?, write: (ResponseStream) throws -> Void)
        /// The connection becomes a WebSocket: `101 Switching Protocols`, then `session` runs on the channel until
        /// it returns, and the connection closes. The route's row authorized the request like any other, and the
        /// handshake's own refusals were answered as HTTP before this value was made (`webSocketRefusal`).
        case webSocket(WebSocketHandshake, limits: WebSocketLimits, session: (WebSocketChannel) -> Void)
    }

    package init(_ status: Status, headers: HTTPHeaders = HTTPHeaders(), body: Body) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON body, serialized with CouchDB's trailing newline.
    package static func json(_ status: Status, _ value: JSON, headers: HTTPHeaders = HTTPHeaders()) -> Response {
        var bytes = value.serialized()
        bytes.append(UInt8(ascii: "\n"))
        return Response(status, headers: headers, body: .bytes(bytes))
    }

    /// A body already serialized (JSON unless `headers` name another `Content-Type`).
    package static func bytes(_ status: Status, _ body: [UInt8], headers: HTTPHeaders = HTTPHeaders()) -> Response {
        Response(status, headers: headers, body: .bytes(body))
    }

    /// A streamed body.
    package static func stream(
        _ status: Status, headers: HTTPHeaders = HTTPHeaders(), contentLength: Int? = nil,
        _ write: @escaping (ResponseStream) throws -> Void
    ) -> Response {
        Response(status, headers: headers, body: .stream(contentLength: contentLength, write: write))
    }

    /// An upgrade to a WebSocket (see `Body.webSocket`); the status is 101.
    package static func webSocket(
        _ handshake: WebSocketHandshake, limits: WebSocketLimits = WebSocketLimits(),
        _ session: @escaping (WebSocketChannel) -> Void
    ) -> Response {
        Response(Status(101), body: .webSocket(handshake, limits: limits, session: session))
    }

    /// The HTTP answer to a request that is not an acceptable upgrade: 400 `bad_request`, or 426 with
    /// `Sec-WebSocket-Version: 13`, each with its reason.
    package static func webSocketRefusal(_ failure: WebSocketHandshake.Failure) -> Response {
        let name = failure.status == 426 ? "upgrade_required" : "bad_request"
        return json(
            Status(failure.status), ["error": .string(name), "reason": .string(failure.reason)],
            headers: failure.headers)
    }

    /// A CouchDB error body, `{"error","reason"}` with the error's status.
    package static func error(_ error: CouchError, headers: HTTPHeaders = HTTPHeaders()) -> Response {
        json(Status(error.status), error.json, headers: headers)
    }

    /// An HTTP status by name (`.ok`, `.created`, …), as CouchDB's handlers send them.
    package struct Status: Sendable, Equatable, CustomStringConvertible {
        package let code: Int

        package init(_ code: Int) { self.code = code }

        package var description: String { String(code) }

        package static let ok = Status(200)
        package static let created = Status(201)
        package static let accepted = Status(202)
        package static let noContent = Status(204)
        package static let partialContent = Status(206)
        package static let found = Status(302)
        package static let notModified = Status(304)
        package static let badRequest = Status(400)
        package static let unauthorized = Status(401)
        package static let forbidden = Status(403)
        package static let notFound = Status(404)
        package static let methodNotAllowed = Status(405)
        package static let notAcceptable = Status(406)
        package static let conflict = Status(409)
        package static let preconditionFailed = Status(412)
        package static let requestEntityTooLarge = Status(413)
        package static let unsupportedMediaType = Status(415)
        package static let rangeNotSatisfiable = Status(416)
        package static let expectationFailed = Status(417)
        package static let internalServerError = Status(500)
        package static let notImplemented = Status(501)
        package static let insufficientStorage = Status(507)
    }
}
