/// The response, written incrementally by the handler.
///
/// Writes are buffered (up to `HTTPLimits.responseBufferBytes`) until `flush()` or `finish()`. Use it only on the
/// handler's thread and only while the handler runs.
public final class HTTPResponseWriter {
    private enum Framing {
        case none
        case length(Int)
        case chunked, closeDelimited
    }

    /// True once `writeHead` succeeded.
    public private(set) var headSent = false
    /// True for a HEAD request: no body bytes are sent whatever the handler writes.
    public let isHEAD: Bool

    private unowned let connection: HTTPConnection
    private let request: HTTPRequestHead
    private let body: HTTPRequestBody
    private var framing = Framing.none
    /// HEAD, 204 and 304 responses: body writes are accepted and dropped.
    private var discardsBody = false
    private var bodyBytesWritten = 0
    private var output: [UInt8] = []
    private var pendingChunk: [UInt8] = []
    private var closeRequested = false
    /// True once `finish()` completed.
    private(set) var isFinished = false
    /// True after an I/O failure or a misuse that leaves the byte stream unusable; the connection must close.
    private(set) var isBroken = false
    /// True when the engine closes the connection after this response.
    private(set) var willClose = false
    /// True once any byte of this response went to the socket.
    private var sentAny = false

    init(connection: HTTPConnection, request: HTTPRequestHead, body: HTTPRequestBody) {
        self.connection = connection
        self.request = request
        self.body = body
        isHEAD = request.isHEAD
    }

    /// Sends (buffers) the status line and headers.
    ///
    /// The engine adds `Date` and `Server` (unless given), `Connection` (close when it will close), and
    /// `Content-Length` or `Transfer-Encoding: chunked`; any of the latter three in `headers` are ignored, except
    /// that `Connection: close` is honoured. With `contentLength` nil the body is chunked on HTTP/1.1 and
    /// close-delimited on HTTP/1.0. HEAD, 204 and 304 responses carry no body.
    /// - Throws: `.responseMisuse` if called twice, for a status outside 200...599 or a header with CR/LF.
    public func writeHead(status: Int, headers: HTTPHeaders, contentLength: Int?) throws(HTTPError) {
        guard !headSent else { throw .responseMisuse("The response head was already sent.") }
        guard !isBroken else { throw .clientGone }
        guard (200...599).contains(status) else { throw .responseMisuse("Invalid response status \(status).") }
        if let contentLength, contentLength < 0 { throw .responseMisuse("Negative Content-Length.") }
        var fields = HTTPHeaders()
        var handlerWantsClose = false
        for (name, value) in headers {
            // Response splitting: a CR or LF from request data must never reach the head.
            guard !name.isEmpty, !Self.hasLineBreak(name), !Self.hasLineBreak(value) else {
                throw .responseMisuse("Invalid response header \(name).")
            }
            if HTTPHeaders.namesEqual(name, "Content-Length") || HTTPHeaders.namesEqual(name, "Transfer-Encoding") {
                continue
            }
            if HTTPHeaders.namesEqual(name, "Connection") {
                handlerWantsClose = handlerWantsClose || HTTPHeaders([(name, value)]).containsToken("close", in: name)
                continue
            }
            fields.add(name, value)
        }
        if status == 204 || status == 304 {
            discardsBody = true
        } else if let contentLength {
            fields.add("Content-Length", String(contentLength))
            framing = isHEAD ? .none : .length(contentLength)
        } else if isHEAD {
            framing = .none
        } else if request.version.isAtLeast1_1 {
            fields.add("Transfer-Encoding", "chunked")
            framing = .chunked
        } else {
            framing = .closeDelimited
        }
        discardsBody = discardsBody || isHEAD
        if case .closeDelimited = framing { handlerWantsClose = true }
        willClose =
            !request.keepAlive || closeRequested || handlerWantsClose || connection.registry.isShuttingDown
            || body.mustCloseIfUnread
        if !fields.contains("Server") { fields.add("Server", connection.configuration.serverHeader) }
        if !fields.contains("Date") { fields.add("Date", HTTPStatus.currentDate()) }
        if willClose {
            fields.add("Connection", "close")
        } else if !request.version.isAtLeast1_1 {
            fields.add("Connection", "keep-alive")
        }
        output += HTTPStatus.serializeHead(status: status, headers: fields)
        headSent = true
        connection.responseStarted = true
    }

    /// Appends body bytes (buffered).
    /// - Throws: `.responseMisuse` before `writeHead`, after `finish`, or beyond the declared Content-Length;
    ///   `.clientGone`/`.timeout` when the connection failed.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(HTTPError) {
        guard headSent, !isFinished else { throw .responseMisuse("Body written outside writeHead...finish.") }
        guard !isBroken else { throw .clientGone }
        if discardsBody || bytes.isEmpty { return }
        switch framing {
        case .none:
            return
        case .length(let declared):
            guard bodyBytesWritten + bytes.count <= declared else {
                isBroken = true
                throw .responseMisuse("More body bytes than the declared Content-Length.")
            }
            bodyBytesWritten += bytes.count
            output.append(contentsOf: bytes)
        case .chunked:
            pendingChunk.append(contentsOf: bytes)
        case .closeDelimited:
            output.append(contentsOf: bytes)
        }
        if output.count + pendingChunk.count >= HTTPLimits.responseBufferBytes { try sendBuffered() }
    }

    /// Appends body bytes (buffered); see `write(_:)` for the raw-buffer variant.
    public func write(_ bytes: [UInt8]) throws(HTTPError) {
        let outcome: Result<Void, HTTPError> = bytes.withUnsafeBytes { raw in
            Result { () throws(HTTPError) in try write(raw) }
        }
        try outcome.get()
    }

    /// Sends everything buffered so far (as one chunk when chunked).
    ///
    /// A flush is what a live feed does before it waits for its next change (a long stream is sent as its buffer
    /// fills, without one), so the buffers' capacity beyond `HTTPLimits.waitingBufferBytes` is let go: a feed that
    /// sent one big batch would otherwise keep up to twice 128 KiB while it waits, for as long as it is open.
    public func flush() throws(HTTPError) {
        try sendBuffered()
        if output.capacity > HTTPLimits.waitingBufferBytes { output = [] }
        if pendingChunk.capacity > HTTPLimits.waitingBufferBytes { pendingChunk = [] }
    }

    private func sendBuffered() throws(HTTPError) {
        guard headSent else { throw .responseMisuse("flush before writeHead.") }
        guard !isBroken else { throw .clientGone }
        emitPendingChunk()
        guard !output.isEmpty else { return }
        do {
            sentAny = true
            try connection.transport.send(output, stall: connection.configuration.sendStallTimeout)
        } catch {
            isBroken = true
            throw error
        }
        output.removeAll(keepingCapacity: output.capacity <= HTTPLimits.responseBufferBytes * 2)
    }

    /// Completes the response: writes the last chunk when chunked and flushes. Calling it again does nothing.
    /// - Throws: `.responseMisuse` when fewer bytes than the declared Content-Length were written (the
    ///   connection then closes); `.clientGone`/`.timeout` when the connection failed.
    public func finish() throws(HTTPError) {
        guard headSent else { throw .responseMisuse("finish before writeHead.") }
        if isFinished { return }
        guard !isBroken else { throw .clientGone }
        if case .length(let declared) = framing, bodyBytesWritten < declared {
            isBroken = true
            throw .responseMisuse("Fewer body bytes than the declared Content-Length.")
        }
        if case .chunked = framing {
            emitPendingChunk()
            output += Array("0\r\n\r\n".utf8)
        }
        isFinished = true
        try flush()
    }

    /// Writes a whole response with Content-Length and finishes it.
    public func respond(status: Int, headers: HTTPHeaders, body: [UInt8]) throws(HTTPError) {
        try writeHead(status: status, headers: headers, contentLength: body.count)
        try write(body)
        try finish()
    }

    /// Non-blocking: true when the peer has closed its side (for long-poll waits).
    public func isPeerClosed() -> Bool { connection.transport.isPeerClosed() }

    /// Takes back a started response of which nothing has reached the socket yet (its head and body are still
    /// buffered), so a failure found part-way through a stream can still be answered with an error of its own.
    /// - Returns: false once bytes are out; the response can then only be cut off (`abort()`).
    public func retract() -> Bool {
        guard headSent, !sentAny, !isFinished, !isBroken else { return false }
        output.removeAll()
        pendingChunk.removeAll()
        headSent = false
        framing = .none
        discardsBody = false
        bodyBytesWritten = 0
        willClose = false
        connection.responseStarted = false
        return true
    }

    /// Cuts off a response that has started: the connection closes without completing it, so the client sees a
    /// truncated response as truncated (no last chunk, or fewer bytes than its Content-Length), never as a whole
    /// one that ends early.
    public func abort() {
        if headSent && !isFinished { isBroken = true }
        closeRequested = true
        willClose = true
    }

    /// After a `101 Switching Protocols` head went out by other means (a WebSocket upgrade): the HTTP exchange is
    /// over, nothing more may be written through this writer, and the connection closes when the handler returns.
    /// The connection, for the upgrade in `HTTPResponseWriter+WebSocket.swift`.
    var upgradeConnection: HTTPConnection { connection }

    func markUpgraded() {
        headSent = true
        isFinished = true
        willClose = true
        sentAny = true
        connection.responseStarted = true
    }

    /// Asks the engine to close the connection after this response (announced if the head is not sent yet).
    public func closeAfterResponse() {
        closeRequested = true
        if headSent { willClose = true }
    }

    private func emitPendingChunk() {
        guard !pendingChunk.isEmpty else { return }
        output += Array("\(String(pendingChunk.count, radix: 16))\r\n".utf8)
        output += pendingChunk
        output += [0x0D, 0x0A]
        pendingChunk.removeAll(keepingCapacity: pendingChunk.capacity <= HTTPLimits.responseBufferBytes * 2)
    }

    private static func hasLineBreak(_ text: String) -> Bool {
        text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }
}
