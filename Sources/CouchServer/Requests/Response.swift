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

/// The body of a streamed response as its writer sees it: bytes out, a flush, and whether the client still listens.
/// The head (the `Response`'s status and headers) goes out with the first bytes, so a writer that fails before
/// writing anything is answered as the error it threw, and one whose head depends on what it computes (a list
/// function's `start()`) may still name it (`setHead`).
package final class ResponseStream {
    private let reply: Reply
    private var status: Response.Status
    private var headers: HTTPHeaders
    private let contentLength: Int?
    private var begun = false

    init(_ reply: Reply, status: Response.Status, headers: HTTPHeaders, contentLength: Int?) {
        self.reply = reply
        self.status = status
        self.headers = headers
        self.contentLength = contentLength
    }

    /// True for a HEAD request: the bytes are dropped, so a writer may skip producing them.
    package var isHEAD: Bool { reply.sink.isHEAD }

    /// Replaces the status and headers while none of the response is out.
    /// - Throws: `.responseMisuse` once the head has gone out.
    func setHead(_ status: Response.Status, headers: HTTPHeaders) throws(HTTPError) {
        guard !begun else { throw .responseMisuse("The response head was already sent.") }
        self.status = status
        self.headers = headers
    }

    package func write(_ bytes: [UInt8]) throws(HTTPError) {
        try begin()
        try reply.write(bytes)
    }

    /// Writes lent bytes (copied into the engine's buffer, no intermediate array).
    package func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        try begin()
        try reply.write(bytes)
    }

    package func write(_ text: String) throws(HTTPError) { try write(Array(text.utf8)) }

    /// Pushes what is buffered to the client (a live feed's rows and heartbeats must not wait).
    package func flush() throws(HTTPError) {
        try begin()
        try reply.sink.flush()
    }

    /// Non-blocking: true once the client closed its side (a live feed stops waiting for it).
    package func isPeerClosed() -> Bool { reply.sink.isPeerClosed() }

    /// Sends the head if it has not gone out yet.
    func begin() throws(HTTPError) {
        guard !begun else { return }
        begun = true
        try reply.begin(status.code, headers: headers, contentLength: contentLength)
    }
}

/// Where a response goes: the connection's writer (`HTTPResponseWriter`), or memory for tests that call the router
/// without a socket (`MemoryResponseSink`).
package protocol ResponseSink: AnyObject {
    var headSent: Bool { get }
    var isHEAD: Bool { get }
    func writeHead(status: Int, headers: HTTPHeaders, contentLength: Int?) throws(HTTPError)
    func write(_ bytes: [UInt8]) throws(HTTPError)
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError)
    func flush() throws(HTTPError)
    func finish() throws(HTTPError)
    func respond(status: Int, headers: HTTPHeaders, body: [UInt8]) throws(HTTPError)
    func isPeerClosed() -> Bool
    /// Takes back a response of which nothing reached the client yet; false once bytes are out.
    func retract() -> Bool
    /// Cuts the connection off (a response that failed after bytes were out).
    func abort()
    func closeAfterResponse()
}

extension HTTPResponseWriter: ResponseSink {}

/// A response kept in memory: status, headers and every body byte written (none for HEAD), for the tests that call
/// the router directly.
package final class MemoryResponseSink: ResponseSink {
    package private(set) var status = 0
    package private(set) var headers = HTTPHeaders()
    package private(set) var body: [UInt8] = []
    package private(set) var headSent = false
    package private(set) var finished = false
    /// True once the response was cut off after bytes went out.
    package private(set) var aborted = false
    /// True once a flush "sent" bytes: from then on the response cannot be taken back, as on a connection.
    private var flushed = false
    package let isHEAD: Bool

    package init(isHEAD: Bool = false) { self.isHEAD = isHEAD }

    package func writeHead(status: Int, headers: HTTPHeaders, contentLength: Int?) throws(HTTPError) {
        guard !headSent else { throw .responseMisuse("The response head was already sent.") }
        self.status = status
        self.headers = headers
        if let contentLength { self.headers.set("Content-Length", String(contentLength)) }
        headSent = true
    }

    package func write(_ bytes: [UInt8]) throws(HTTPError) {
        if !isHEAD { body += bytes }
    }

    package func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        if !isHEAD { body += bytes }
    }

    package func flush() throws(HTTPError) { flushed = headSent }

    package func finish() throws(HTTPError) { finished = true }

    package func respond(status: Int, headers: HTTPHeaders, body: [UInt8]) throws(HTTPError) {
        try writeHead(status: status, headers: headers, contentLength: body.count)
        try write(body)
        try finish()
    }

    package func isPeerClosed() -> Bool { false }

    package func retract() -> Bool {
        guard headSent else { return true }
        guard !flushed, !finished else { return false }
        headSent = false
        status = 0
        headers = HTTPHeaders()
        body = []
        return true
    }

    package func abort() { aborted = true }

    package func closeAfterResponse() {}
}

extension Reply {
    /// Writes `response` to the sink: the one place a response reaches the connection.
    /// - Throws: What the stream's writer threw (the caller answers it as an error if nothing was sent yet), or
    ///   the connection's failure.
    func send(_ response: Response) throws {
        switch response.body {
        case .bytes(let bytes):
            try self.bytes(response.status.code, bytes, headers: response.headers)
        case .stream(let contentLength, let write):
            let stream = ResponseStream(
                self, status: response.status, headers: response.headers, contentLength: contentLength)
            try write(stream)
            try stream.begin()
            try finish()
        }
    }
}
