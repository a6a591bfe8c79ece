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
    func bytes(_ status: Int, _ body: [UInt8], headers extra: HTTPHeaders = HTTPHeaders()) throws(HTTPError) {
        var headers = Reply.baseHeaders()
        for (name, value) in extraHeaders { headers.add(name, value) }
        for (name, value) in extra { headers.set(name, value) }
        self.status = status
        bytesSent += sink.isHEAD ? 0 : body.count
        try sink.respond(status: status, headers: headers, body: body)
    }

    /// Starts a streamed response (chunked on HTTP/1.1 unless `contentLength` is given).
    func begin(_ status: Int, headers extra: HTTPHeaders = HTTPHeaders(), contentLength: Int? = nil)
        throws(HTTPError)
    {
        var headers = Reply.baseHeaders()
        for (name, value) in extraHeaders { headers.add(name, value) }
        for (name, value) in extra { headers.set(name, value) }
        self.status = status
        try sink.writeHead(status: status, headers: headers, contentLength: contentLength)
    }

    func write(_ bytes: [UInt8]) throws(HTTPError) {
        bytesSent += bytes.count
        try sink.write(bytes)
    }

    /// Writes lent bytes (copied into the engine's buffer, no intermediate array).
    func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        bytesSent += bytes.count
        try sink.write(bytes)
    }

    func write(_ text: String) throws(HTTPError) {
        try write(Array(text.utf8))
    }

    func flush() throws(HTTPError) { try sink.flush() }

    func finish() throws(HTTPError) { try sink.finish() }

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
