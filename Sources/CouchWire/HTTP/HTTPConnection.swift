/// One client connection, served by its own thread: reads a head, runs the handler, repeats while kept alive.
///
/// Requests are handled strictly one at a time, so pipelined requests are answered in order; bytes of the
/// next request simply wait in the read buffer (or the kernel) until the current response is finished.
final class HTTPConnection {
    /// The accepted socket (its descriptor is closed by the registry).
    let socket: HTTPSocket
    /// What requests are read from and responses written to: `socket` itself, or TLS over it once the
    /// handshake of a TLS port succeeded.
    var transport: any HTTPTransport
    let id: Int
    let configuration: HTTPServerConfiguration
    let registry: HTTPConnectionRegistry
    private let handler: HTTPHandler
    private let readBuffer: UnsafeMutableRawBufferPointer
    private var bufferStart = 0
    private var bufferEnd = 0
    /// Set by the writer once it has produced the response head; after that no `100 Continue` is sent.
    var responseStarted = false
    /// While draining an unread body, no read may wait past this, however often bytes trickle in.
    var drainDeadline: HTTPDeadline?
    /// The current request's body deadline before any bytes earned more time (`bodyTimeout` from its head),
    /// and the body bytes taken from the socket since.
    private var bodyDeadlineBase = HTTPDeadline(nanoseconds: 0)
    private var bodyBytesReceived = 0

    /// The client's numeric address, copied into every request head.
    private let remoteAddress: String?

    init(
        socket: HTTPSocket, id: Int, configuration: HTTPServerConfiguration, registry: HTTPConnectionRegistry,
        handler: @escaping HTTPHandler, remoteAddress: String? = nil
    ) {
        self.remoteAddress = remoteAddress
        self.socket = socket
        transport = socket
        self.id = id
        self.configuration = configuration
        self.registry = registry
        self.handler = handler
        readBuffer = .allocate(byteCount: HTTPLimits.readBufferBytes, alignment: 1)
    }

    deinit { readBuffer.deallocate() }

    /// Serves requests until the connection ends, then closes the socket.
    func run() {
        configuration.traffic?.connectionOpened()
        defer {
            configuration.traffic?.connectionClosed()
            transport.finish()
            registry.removeAndClose(id, socket: socket)
        }
        // Before the first request the header timeout runs from accept (not from the first byte), so silent
        // and trickling connections alike are dropped within one header timeout. On a TLS port the handshake
        // spends from the same budget: a handshake that stalls cannot hold the thread longer.
        var waitDeadline = HTTPDeadline.after(configuration.headerTimeout)
        if let context = configuration.tls, !startTLS(context, deadline: waitDeadline) { return }
        var isFirstRequest = true
        while true {
            let next = readHead(idleDeadline: waitDeadline, headDeadline: isFirstRequest ? waitDeadline : nil)
            isFirstRequest = false
            guard let (parsedHead, framing) = next else { return }
            var head = parsedHead
            head.remoteAddress = remoteAddress
            head.isSecure = configuration.tls != nil
            registry.markBusy(id, method: head.method, path: head.path, client: remoteAddress)
            let outcome = serve(head, framing)
            let mayContinue = registry.markIdle(id)
            switch outcome {
            case .keepAlive where mayContinue:
                // A crowded server wants its slots back: idle keep-alive connections wait less.
                waitDeadline = .after(registry.isCrowded ? configuration.crowdedIdleTimeout : configuration.idleTimeout)
            case .keepAlive, .close: return
            case .closeLingering:
                linger()
                return
            }
        }
    }

    // MARK: - Request heads

    /// Reads the next request head; on a parse error, timeout mid-head, or end of stream answers if useful and
    /// returns nil (the caller closes).
    private func readHead(
        idleDeadline: HTTPDeadline, headDeadline fixedDeadline: HTTPDeadline?
    ) -> (HTTPRequestHead, HTTPBodyFraming)? {
        var parser = HTTPRequestParser()
        var headDeadline = fixedDeadline
        while true {
            if bufferStart < bufferEnd {
                // Slowloris defence: from the first byte on, the whole head must arrive within headerTimeout.
                if headDeadline == nil { headDeadline = .after(configuration.headerTimeout) }
                let input = UnsafeRawBufferPointer(rebasing: readBuffer[bufferStart..<bufferEnd])
                do {
                    switch try parser.parse(input) {
                    case .needMoreData:
                        bufferStart = bufferEnd
                    case .head(let head, let framing, let consumed):
                        bufferStart += consumed
                        return (head, framing)
                    }
                } catch {
                    refuse(HTTPError(error))
                    return nil
                }
            }
            bufferStart = 0
            bufferEnd = 0
            switch transport.receive(into: readBuffer, deadline: headDeadline ?? idleDeadline) {
            case .received(let count): bufferEnd = count
            case .endOfStream, .failed: return nil
            case .timedOut:
                if parser.hasPartialRequest { refuse(.requestTimeout) }
                return nil
            }
        }
    }

    /// Sends an error response with `Connection: close`, then lingers so the client can read it.
    func refuse(_ error: HTTPError) {
        let response = HTTPStatus.errorResponse(error, serverHeader: configuration.serverHeader)
        try? transport.send(response, stall: configuration.sendStallTimeout)
        linger()
    }

    /// Half-closes and discards incoming bytes for a short while: closing with unread bytes would make the
    /// kernel send a reset, which can destroy the response before the client reads it.
    private func linger() {
        transport.shutdownWrite()
        let deadline = HTTPDeadline.after(HTTPLimits.lingerDuration)
        var discarded = 0
        while discarded < HTTPLimits.lingerBytes {
            guard case .received(let count) = transport.receive(into: readBuffer, deadline: deadline) else { return }
            discarded += count
        }
    }

    // MARK: - Serving one request

    private enum Outcome { case keepAlive, close, closeLingering }

    private func serve(_ head: HTTPRequestHead, _ framing: HTTPBodyFraming) -> Outcome {
        responseStarted = false
        bodyDeadlineBase = .after(configuration.bodyTimeout)
        bodyBytesReceived = 0
        let body = HTTPRequestBody(connection: self, framing: framing, expectsContinue: head.expectsContinue)
        let writer = HTTPResponseWriter(connection: self, request: head, body: body)
        handler(head, body, writer)
        if !writer.headSent {
            // A body failure (bad chunk, 413, stall) explains the missing response better than a bare 500.
            let error = body.failure ?? .responseMisuse("The handler sent no response.")
            if error != .clientGone {
                try? writer.respond(
                    status: error.status, headers: ["Content-Type": "application/json"], body: error.jsonBody)
            }
        } else if !writer.isFinished {
            try? writer.finish()
        }
        if writer.isBroken || body.failure == .clientGone { return .close }
        if writer.willClose { return body.isComplete ? .close : .closeLingering }
        return body.drainForReuse() ? .keepAlive : .closeLingering
    }

    // MARK: - Body bytes (used by HTTPRequestBody)

    var bufferedByteCount: Int { bufferEnd - bufferStart }

    /// Takes up to `maxCount` body bytes: from the read buffer if it holds any, else straight from the socket.
    /// - Throws: `.clientGone` at end of stream, `.timeout` after `bodyStallTimeout` without data.
    func readBodyBytes(upTo maxCount: Int) throws(HTTPError) -> [UInt8] {
        if bufferedByteCount > 0 {
            let count = min(maxCount, bufferedByteCount)
            let bytes = Array(UnsafeRawBufferPointer(rebasing: readBuffer[bufferStart..<(bufferStart + count)]))
            bufferStart += count
            return bytes
        }
        let wanted = min(maxCount, HTTPLimits.maxReadChunkBytes)
        var outcome = HTTPSocket.ReceiveOutcome.failed
        let deadline = bodyReadDeadline()
        let bytes = [UInt8](unsafeUninitializedCapacity: wanted) { buffer, initialized in
            outcome = transport.receive(into: UnsafeMutableRawBufferPointer(buffer), deadline: deadline)
            if case .received(let count) = outcome { initialized = count } else { initialized = 0 }
        }
        try Self.check(outcome)
        bodyBytesReceived += bytes.count
        return bytes
    }

    /// Fills up to `buffer.count` body bytes into `buffer`: from the read buffer if it holds any, else straight
    /// from the socket (one `recv`, no intermediate copy).
    /// - Returns: How many bytes were read (at least one unless `buffer` is empty).
    /// - Throws: `.clientGone` at end of stream, `.timeout` after `bodyStallTimeout` without data.
    func readBodyBytes(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
        guard buffer.count > 0 else { return 0 }
        if bufferedByteCount > 0 {
            let count = min(buffer.count, bufferedByteCount)
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: readBuffer[bufferStart..<(bufferStart + count)]))
            bufferStart += count
            return count
        }
        let outcome = transport.receive(into: buffer, deadline: bodyReadDeadline())
        try Self.check(outcome)
        if case .received(let count) = outcome {
            bodyBytesReceived += count
            return count
        }
        return 0
    }

    /// After a protocol upgrade: the bytes already buffered (sent right after the request head) first, then the
    /// transport's, waiting until `deadline`.
    func receiveUpgraded(into buffer: UnsafeMutableRawBufferPointer, deadline: HTTPDeadline)
        -> HTTPSocket.ReceiveOutcome
    {
        guard buffer.count > 0 else { return .received(0) }
        if bufferedByteCount > 0 {
            let count = min(buffer.count, bufferedByteCount)
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: readBuffer[bufferStart..<(bufferStart + count)]))
            bufferStart += count
            return .received(count)
        }
        return transport.receive(into: buffer, deadline: deadline)
    }

    /// Refills the (empty) read buffer from the socket.
    func refillBuffer() throws(HTTPError) {
        bufferStart = 0
        bufferEnd = 0
        let outcome = transport.receive(into: readBuffer, deadline: bodyReadDeadline())
        try Self.check(outcome)
        if case .received(let count) = outcome {
            bufferEnd = count
            bodyBytesReceived += count
        }
    }

    enum ChunkOutcome {
        case needMoreData
        case data([UInt8])
        case end
    }

    /// Runs the chunked decoder over at most `maxCount` buffered bytes.
    func decodeBuffered(_ decoder: inout HTTPChunkedDecoder, maxCount: Int) throws(HTTPError) -> ChunkOutcome {
        let count = min(bufferedByteCount, maxCount)
        let input = UnsafeRawBufferPointer(rebasing: readBuffer[bufferStart..<(bufferStart + count)])
        let step: HTTPChunkedDecoder.Step
        do { step = try decoder.decode(input) } catch { throw HTTPError(error) }
        switch step {
        case .needMoreData:
            bufferStart += count
            return .needMoreData
        case .data(let range):
            bufferStart += range.upperBound
            return .data(Array(UnsafeRawBufferPointer(rebasing: input[range])))
        case .end(let consumed):
            bufferStart += consumed
            return .end
        }
    }

    /// The soonest of: the stall timeout from now, the drain deadline, and the whole-body deadline
    /// (`bodyTimeout` from the head plus a second per `minimumBodyRate` bytes received).
    private func bodyReadDeadline() -> HTTPDeadline {
        let stall = HTTPDeadline.after(configuration.bodyStallTimeout)
        let rate = UInt64(max(1, configuration.minimumBodyRate))
        let earned = UInt64(bodyBytesReceived) / rate &* 1_000_000_000
        let total = HTTPDeadline(nanoseconds: bodyDeadlineBase.nanoseconds &+ earned)
        let soonest = min(stall, total)
        return drainDeadline.map { min($0, soonest) } ?? soonest
    }

    private static func check(_ outcome: HTTPSocket.ReceiveOutcome) throws(HTTPError) {
        switch outcome {
        case .received: return
        case .timedOut: throw .timeout
        case .endOfStream, .failed: throw .clientGone
        }
    }
}
