/// A WebSocket connection taken over from an HTTP connection after its `101 Switching Protocols`, served on the
/// connection's own thread with blocking reads bounded by deadlines, like the rest of the engine.
///
/// `WebSocketSession` makes every decision (PONGs, the close handshake, PINGs after silence, failing on a broken
/// frame); this class only moves bytes and the clock. Use it only on the handler's thread and only while the handler
/// runs: when the handler returns, the connection is closed.
public final class WebSocketChannel {
    /// What `receive` returns.
    public enum Received: Sendable, Equatable {
        case message(WebSocketMessage)
        /// The caller's deadline passed with no message (the connection is still open).
        case timedOut
        /// The connection has ended with this code (the peer's CLOSE, ours, 1002/1007/1009 for a bad frame, 1001
        /// for an unanswered PING, 1006 for a vanished peer). Every later call returns it again.
        case closed(WebSocketCloseCode)
    }

    /// The subprotocol negotiated in the handshake.
    public let selectedProtocol: String?
    private unowned let connection: HTTPConnection
    private var session: WebSocketSession
    private let buffer: UnsafeMutableRawBufferPointer
    private var inbox: [WebSocketMessage] = []
    private var inboxStart = 0
    private var ended: WebSocketCloseCode?

    init(connection: HTTPConnection, selectedProtocol: String?, limits: WebSocketLimits) {
        self.connection = connection
        self.selectedProtocol = selectedProtocol
        session = WebSocketSession(limits: limits, now: HTTPDeadline.now().nanoseconds)
        buffer = .allocate(byteCount: HTTPLimits.readBufferBytes, alignment: 1)
    }

    deinit { buffer.deallocate() }

    /// Waits for the next message, answering PINGs and running the close handshake and the timers meanwhile.
    /// - Parameter deadline: When to give up waiting and return `.timedOut`; nil waits as long as the connection lives.
    public func receive(until deadline: ContinuousClock.Instant? = nil) -> Received {
        let callerDeadline = deadline.map { HTTPDeadline.after($0 - .now) }
        while true {
            if inboxStart < inbox.count {
                let message = inbox[inboxStart]
                inboxStart += 1
                if inboxStart == inbox.count {
                    inbox.removeAll(keepingCapacity: true)
                    inboxStart = 0
                }
                return .message(message)
            }
            if let ended { return .closed(ended) }
            let timer = session.nextDeadline.map { HTTPDeadline(nanoseconds: $0) }
            let wait = [timer, callerDeadline].compactMap { $0 }.min() ?? .after(.seconds(3600))
            switch connection.receiveUpgraded(into: buffer, deadline: wait) {
            case .received(let count):
                perform(session.received(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), now: now()))
            case .timedOut:
                let current = HTTPDeadline.now()
                if let timer, current >= timer { perform(session.timeout(now: current.nanoseconds)) }
                if let callerDeadline, current >= callerDeadline, inboxStart == inbox.count, ended == nil {
                    return .timedOut
                }
            case .endOfStream, .failed:
                // At a server shutdown only our reading was ended: say goodbye (1001) before the connection goes.
                if session.isOpen && connection.registry.isShuttingDown {
                    perform(session.close(.goingAway, reason: "The server is shutting down.", now: now()))
                }
                perform(session.streamEnded())
            }
        }
    }

    /// Sends one message as one frame.
    /// - Throws: `.clientGone` once the connection is closing or closed, or the write failed; `.timeout` when the
    ///   peer stopped reading for `sendStallTimeout`.
    public func send(_ message: WebSocketMessage) throws(HTTPError) {
        guard ended == nil, let frame = session.frame(message) else { throw .clientGone }
        do {
            try connection.transport.send(frame, stall: connection.configuration.sendStallTimeout)
        } catch {
            ended = .abnormal
            throw error
        }
    }

    /// Starts the close handshake and waits (at most `closeTimeout`) for the peer's CLOSE, dropping any message
    /// that arrives meanwhile.
    /// - Returns: The code the connection ended with.
    @discardableResult
    public func close(_ code: WebSocketCloseCode = .normal, reason: String = "") -> WebSocketCloseCode {
        perform(session.close(code, reason: reason, now: now()))
        while true {
            if case .closed(let final) = receive() { return final }
        }
    }

    private func now() -> UInt64 { HTTPDeadline.now().nanoseconds }

    private func perform(_ actions: [WebSocketSession.Action]) {
        for action in actions {
            switch action {
            case .deliver(let message):
                inbox.append(message)
            case .send(let bytes):
                guard ended == nil else { continue }
                do {
                    try connection.transport.send(bytes, stall: connection.configuration.sendStallTimeout)
                } catch {
                    ended = .abnormal
                }
            case .closeConnection(let code):
                if ended == nil { ended = code }
                connection.transport.shutdownWrite()
            }
        }
    }
}
