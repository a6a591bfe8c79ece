import CouchWire

/// The response side of one request: writes `Response` values (`send`) to the engine's writer with CouchDB's
/// default headers, and remembers the status and byte count for the access log.
package final class Reply {
    let sink: any ResponseSink
    private(set) var status = 0
    private(set) var bytesSent = 0
    /// Headers added to whatever this request is answered with, errors included (CORS, a
    /// refreshed session cookie); a header the handler sets itself wins.
    var extraHeaders = HTTPHeaders()

    init(sink: any ResponseSink) {
        self.sink = sink
    }

    /// Headers every CouchDB response carries besides the engine's Date and Server.
    static func baseHeaders(contentType: String = "application/json") -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add("Content-Type", contentType)
        headers.add("Cache-Control", "must-revalidate")
        return headers
    }

    /// Sends a complete response whose body is already serialized (JSON unless headers say otherwise).
    fileprivate func bytes(_ status: Int, _ body: [UInt8], headers extra: HTTPHeaders = HTTPHeaders()) throws(HTTPError)
    {
        var headers = Reply.baseHeaders()
        for (name, value) in extraHeaders { headers.add(name, value) }
        for (name, value) in extra { headers.set(name, value) }
        self.status = status
        bytesSent += sink.isHEAD ? 0 : body.count
        try sink.respond(status: status, headers: headers, body: body)
    }

    /// Starts a streamed response (chunked on HTTP/1.1 unless `contentLength` is given).
    fileprivate func begin(_ status: Int, headers extra: HTTPHeaders = HTTPHeaders(), contentLength: Int? = nil)
        throws(HTTPError)
    {
        var headers = Reply.baseHeaders()
        for (name, value) in extraHeaders { headers.add(name, value) }
        for (name, value) in extra { headers.set(name, value) }
        self.status = status
        try sink.writeHead(status: status, headers: headers, contentLength: contentLength)
    }

    fileprivate func write(_ bytes: [UInt8]) throws(HTTPError) {
        bytesSent += bytes.count
        try sink.write(bytes)
    }

    /// Writes lent bytes (copied into the engine's buffer, no intermediate array).
    fileprivate func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        bytesSent += bytes.count
        try sink.write(bytes)
    }

    fileprivate func finish() throws(HTTPError) { try sink.finish() }

    /// Sends a CouchDB error body. A stream that failed part-way is taken back when none of it was sent yet
    /// (a `_changes` or `_all_docs` whose database was deleted under it answers 404 like any other request);
    /// once bytes are out it is cut off, so the client sees the failure instead of a short, complete-looking
    /// response.
    package func error(_ error: CouchError, headers: HTTPHeaders = HTTPHeaders()) {
        if sink.headSent {
            guard sink.retract() else { return sink.abort() }
            status = 0
            bytesSent = 0
        }
        do {
            try send(.error(error, headers: headers))
        } catch {
            sink.closeAfterResponse()
        }
    }
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
        case .webSocket(let handshake, let limits, let session):
            let channel = try sink.upgradeToWebSocket(handshake, limits: limits)
            status = 101
            session(channel)
        }
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
