/// The server's side of one WebSocket connection as a pure state machine
/// ([RFC 6455 §5.5, §7](https://www.rfc-editor.org/rfc/rfc6455#section-7)): it parses what arrives, answers PINGs,
/// runs the close handshake, fails the connection on a broken rule, and keeps its timers, while its owner only
/// performs the actions it returns. Time is a monotonic count of nanoseconds passed in, so tests drive it with a
/// made-up clock and no socket.
///
/// Timers: after `pingInterval` without a byte from the peer it sends a PING; if `pongTimeout` then passes without a
/// byte it closes (1001); a frame or fragmented message unfinished `frameTimeout` after its first byte closes (1008);
/// after sending a CLOSE it waits `closeTimeout` for the peer's before dropping the link.
public struct WebSocketSession: Sendable {
    /// What the owner must do, in order.
    public enum Action: Sendable, Equatable {
        /// Hand a complete data message to the application.
        case deliver(WebSocketMessage)
        /// Write these bytes (frames) to the peer.
        case send([UInt8])
        /// Close the TCP connection; the session has ended with this code (the peer's, ours, or 1006).
        case closeConnection(WebSocketCloseCode)
    }

    public enum State: Sendable, Equatable {
        case open
        /// We sent a CLOSE with this code at this time and wait for the peer's.
        case closing(WebSocketCloseCode, since: UInt64)
        case closed(WebSocketCloseCode)
    }

    public let limits: WebSocketLimits
    public private(set) var state = State.open
    private var parser: WebSocketFrameParser
    private var lastReceived: UInt64
    private var pingSentAt: UInt64?
    /// When the frame or message now partly received began arriving (nil: none is).
    private var partialSince: UInt64?

    /// - Parameters:
    ///   - limits: Sizes and timeouts.
    ///   - now: The monotonic time of the upgrade, in nanoseconds.
    public init(limits: WebSocketLimits = WebSocketLimits(), now: UInt64) {
        self.limits = limits
        parser = WebSocketFrameParser(role: .server, limits: limits)
        lastReceived = now
    }

    /// Whether application messages may still be sent.
    public var isOpen: Bool { state == .open }

    /// Bytes from the peer.
    /// - Returns: Messages to deliver, frames to send (PONGs, CLOSE), and at the end possibly `closeConnection`.
    public mutating func received(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> [Action] {
        if case .closed = state { return [] }
        if !bytes.isEmpty {
            lastReceived = now
            pingSentAt = nil
        }
        var actions: [Action] = []
        var rest = bytes
        while true {
            let step: WebSocketFrameParser.Step
            do {
                step = try parser.parse(rest)
            } catch {
                return actions + fail(error.closeCode, reason: error.reason)
            }
            guard case .event(let event, let consumed) = step else {
                notePartial(now: now)
                return actions
            }
            // An event ends the frame (and any message) it completes; what follows starts afresh.
            partialSince = nil
            rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
            actions += handle(event)
            if case .closed = state { return actions }
        }
    }

    /// Starts the frame timer when bytes of an unfinished frame or message are held, and stops it when none are.
    /// (A fragment completed without an event leaves the message partial, so its timer runs on.)
    private mutating func notePartial(now: UInt64) {
        if parser.hasPartialFrame {
            if partialSince == nil { partialSince = now }
        } else {
            partialSince = nil
        }
    }

    private mutating func handle(_ event: WebSocketEvent) -> [Action] {
        switch (event, state) {
        case (.message(let message), .open):
            return [.deliver(message)]
        case (.message, _):
            // After our CLOSE, data is read and dropped (§5.5.1: we send nothing more).
            return []
        case (.ping(let payload), .open):
            return [.send(WebSocketFrameWriter.frame(.pong, payload: payload))]
        case (.ping, _), (.pong, _):
            return []
        case (.close(let code, _), .open):
            // Echo the code (an empty CLOSE for none), then close first, as the server should (§7.1.1).
            let ended = code ?? .noStatus
            state = .closed(ended)
            return [.send(WebSocketFrameWriter.close(code: code)), .closeConnection(ended)]
        case (.close, .closing(let ours, _)):
            state = .closed(ours)
            return [.closeConnection(ours)]
        case (.close, .closed):
            return []
        }
    }

    /// Frames an application message, or nil once closing (nothing may follow our CLOSE).
    public func frame(_ message: WebSocketMessage) -> [UInt8]? {
        guard state == .open else { return nil }
        return WebSocketFrameWriter.message(message)
    }

    /// Starts the close handshake: our CLOSE now, the connection closed when the peer's arrives or at the timeout.
    public mutating func close(_ code: WebSocketCloseCode, reason: String = "", now: UInt64) -> [Action] {
        guard state == .open else { return [] }
        state = .closing(code, since: now)
        return [.send(WebSocketFrameWriter.close(code: code, reason: reason))]
    }

    /// Fails the connection (§7.1.7): a CLOSE with the reason, then the TCP connection closed at once.
    private mutating func fail(_ code: WebSocketCloseCode, reason: String) -> [Action] {
        let wasOpen = state == .open
        state = .closed(code)
        return (wasOpen ? [.send(WebSocketFrameWriter.close(code: code, reason: reason))] : []) + [
            .closeConnection(code)
        ]
    }

    /// The peer's stream ended (or failed) without a completed close handshake.
    public mutating func streamEnded() -> [Action] {
        switch state {
        case .closed: return []
        case .closing(let ours, _):
            state = .closed(ours)
            return [.closeConnection(ours)]
        case .open:
            state = .closed(.abnormal)
            return [.closeConnection(.abnormal)]
        }
    }

    /// When `timeout(now:)` should next be called, in monotonic nanoseconds; nil once closed.
    public var nextDeadline: UInt64? {
        switch state {
        case .closed: nil
        case .closing(_, let since): since &+ limits.closeTimeout.clampedNanoseconds
        case .open:
            min(
                pingSentAt.map { $0 &+ limits.pongTimeout.clampedNanoseconds }
                    ?? lastReceived &+ limits.pingInterval.clampedNanoseconds,
                partialSince.map { $0 &+ limits.frameTimeout.clampedNanoseconds } ?? UInt64.max)
        }
    }

    /// Runs the timers: a PING after silence, a close when it goes unanswered or our CLOSE does.
    public mutating func timeout(now: UInt64) -> [Action] {
        guard let deadline = nextDeadline, now >= deadline else { return [] }
        switch state {
        case .closed: return []
        case .closing(let ours, _):
            state = .closed(ours)
            return [.closeConnection(ours)]
        case .open:
            if let partialSince, now >= partialSince &+ limits.frameTimeout.clampedNanoseconds {
                return fail(.policyViolation, reason: "A frame took too long to arrive.")
            }
            if pingSentAt == nil {
                pingSentAt = now
                return [.send(WebSocketFrameWriter.frame(.ping, payload: [UInt8]()))]
            }
            return fail(.goingAway, reason: "No answer to PING.")
        }
    }
}
