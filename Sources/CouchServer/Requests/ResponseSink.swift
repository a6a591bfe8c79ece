import CouchWire

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
    /// Answers `101 Switching Protocols` and hands the connection over as a WebSocket.
    func upgradeToWebSocket(_ handshake: WebSocketHandshake, limits: WebSocketLimits) throws(HTTPError)
        -> WebSocketChannel
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
    /// What `isPeerClosed()` answers: a test sets it to play a client that went away.
    package var peerClosed = false

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

    package func isPeerClosed() -> Bool { peerClosed }

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

    /// Refuses: a response in memory has no connection to hand over (the app answers the misuse as an error).
    package func upgradeToWebSocket(_ handshake: WebSocketHandshake, limits: WebSocketLimits) throws(HTTPError)
        -> WebSocketChannel
    {
        throw .responseMisuse("A response in memory cannot become a WebSocket.")
    }
}
