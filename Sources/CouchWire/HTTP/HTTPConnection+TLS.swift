extension HTTPConnection {
    /// The first byte of a TLS connection: a handshake record.
    private static let handshakeRecord: UInt8 = 0x16

    /// Before the first request on a TLS port: looks at the first byte without consuming it, then runs the
    /// server handshake until `deadline` (the first request's header deadline) and switches `transport`
    /// to TLS.
    ///
    /// A client that sends plain HTTP (its first byte is an uppercase letter, as every method's) is answered
    /// `400 bad_request` in plain HTTP, so a person who typed `http://` sees why; anything else that is not
    /// a handshake (garbage, a truncated or failed handshake, a timeout) is closed without a word.
    /// - Returns: false when the connection must close.
    func startTLS(_ context: TLSContext, deadline: HTTPDeadline) -> Bool {
        guard let first = socket.peekByte(deadline: deadline) else { return false }
        guard first == Self.handshakeRecord else {
            if first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") {
                refuse(.malformed("This port speaks HTTPS: the request was sent in plain HTTP."))
            }
            return false
        }
        do throws(TLSError) {
            let stream = try TLSStream.server(context: context, descriptor: socket.descriptor)
            try stream.handshake(deadline: deadline)
            transport = HTTPTLSTransport(socket: socket, stream: stream)
            return true
        } catch {
            return false
        }
    }
}

/// TLS over an accepted socket, as the connection's transport; maps TLS outcomes to the engine's.
final class HTTPTLSTransport: HTTPTransport {
    let socket: HTTPSocket
    let stream: TLSStream

    init(socket: HTTPSocket, stream: TLSStream) {
        self.socket = socket
        self.stream = stream
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: HTTPDeadline) -> HTTPSocket.ReceiveOutcome {
        do throws(TLSError) {
            let count = try stream.receive(into: buffer, deadline: deadline)
            // Counted as plain HTTP bytes (`_stats`), without TLS's framing.
            if count > 0 { socket.traffic?.didReceive(count) }
            return count == 0 && buffer.count > 0 ? .endOfStream : .received(count)
        } catch {
            switch error {
            case .timeout: return .timedOut
            case .closed: return .endOfStream
            default: return .failed
            }
        }
    }

    func send(_ bytes: UnsafeRawBufferPointer, stall: Duration) throws(HTTPError) {
        do throws(TLSError) {
            try stream.send(bytes, timeout: stall)
            socket.traffic?.didSend(bytes.count)
        } catch {
            throw error == .timeout ? .timeout : .clientGone
        }
    }

    func isPeerClosed() -> Bool { stream.isPeerClosed() }

    func shutdownWrite() {
        stream.sendCloseNotify()
        socket.shutdownWrite()
    }

    func finish() { stream.sendCloseNotify() }
}
