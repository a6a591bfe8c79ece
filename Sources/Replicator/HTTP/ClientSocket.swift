import CouchWire

/// One client connection's byte stream: CouchWire's `HTTPSocket` (the server's socket layer: non-blocking,
/// every wait a `poll` bounded by a timeout, so a silent peer is a clear `.timeout`, never a hang), and after
/// `startTLS` a `TLSStream` over the same descriptor. What it adds is the replicator's view: the peer's name, and
/// every outcome as a `ReplicationError` that names it.
///
/// `@unchecked Sendable`: it is used by one thread at a time (its `ClientConnection` is checked out of the
/// client's pool by one request), and `tls`, its only mutable property, is set once by `startTLS` before the
/// connection is first pooled or tracked. The one call from another thread is `shutdown()` (cancelling), which
/// acts on the descriptor alone.
final class ClientSocket: @unchecked Sendable {
    private let socket: HTTPSocket
    let peer: String
    /// Set once the TLS handshake has succeeded (`https://` peers).
    private(set) var tls: TLSStream?

    /// Adopts a connected descriptor (closed by `close()`). Here and in `connect`, `acknowledgesAtOnce: false`:
    /// `TCP_QUICKACK` is for a server reading requests that a Nagle client holds back; the client never set it.
    convenience init(descriptor: Int32, peer: String) {
        self.init(socket: HTTPSocket(descriptor: descriptor, acknowledgesAtOnce: false), peer: peer)
    }

    private init(socket: HTTPSocket, peer: String) {
        self.socket = socket
        self.peer = peer
    }

    /// Connects to `host:port`, trying each resolved address in turn, each within `timeout`.
    static func connect(host: String, port: Int, timeout: Duration) throws(ReplicationError) -> ClientSocket {
        let peer = "\(host):\(port)"
        do throws(HTTPSocket.ConnectFailure) {
            let socket = try HTTPSocket.connect(host: host, port: port, timeout: timeout, acknowledgesAtOnce: false)
            return ClientSocket(socket: socket, peer: peer)
        } catch {
            switch error {
            case .refused: throw .connectionRefused(peer)
            case .timedOut: throw .timeout(peer)
            case .unreachable: throw .unreachable(peer)
            }
        }
    }

    /// Runs the TLS handshake with `host` (the URL's host: SNI and the name check) within `timeout`, and checks
    /// the peer's certificate as `context` says. Nothing of HTTP is sent before it has passed.
    func startTLS(context: TLSContext, host: String, timeout: Duration) throws(ReplicationError) {
        do {
            let stream = try TLSStream.client(context: context, descriptor: socket.descriptor, host: host)
            try stream.handshake(timeout: timeout)
            tls = stream
        } catch {
            throw Self.replicationError(error, peer: peer)
        }
    }

    /// A TLS failure as the person who started the replication should read it.
    static func replicationError(_ error: TLSError, peer: String) -> ReplicationError {
        switch error {
        case .pinMismatch(let expected, let actual):
            return .certificateRejected(
                peer, "its SHA-256 fingerprint \(actual.colonHex) does not match the pin \(expected.colonHex)")
        case .verification(let reason):
            let untrusted = ["self-signed", "self signed", "local issuer", "issuer certificate"].contains {
                reason.contains($0)
            }
            return .certificateRejected(
                peer,
                untrusted
                    ? "\(reason): it is not issued by an authority this machine trusts (pin its SHA-256 fingerprint "
                        + "with --pin or the URL's #sha256=, or name its CA with --cacert)" : reason)
        case .handshake(let reason):
            let plain = ["wrong version number", "packet length too long", "record layer failure"].contains {
                reason.contains($0)
            }
            return .tlsFailed(peer, plain ? "\(reason) (is it an http:// server?)" : reason)
        case .notTLS: return .tlsFailed(peer, "the peer does not speak TLS (is it an http:// server?)")
        case .configuration(let reason): return .badRequest(reason)
        case .timeout: return .timeout(peer)
        case .closed, .failed: return .connectionReset(peer)
        }
    }

    /// Receives up to `buffer.count` bytes, waiting at most `timeout`; 0 means the peer closed.
    func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(ReplicationError) -> Int {
        if let tls {
            do {
                return try tls.receive(into: buffer, timeout: timeout)
            } catch {
                throw Self.replicationError(error, peer: peer)
            }
        }
        switch socket.receive(into: buffer, deadline: .after(timeout)) {
        case .received(let count): return count
        case .endOfStream: return 0
        case .timedOut: throw .timeout(peer)
        case .failed: throw .connectionReset(peer)
        }
    }

    /// Sends every byte; each wait for buffer space may last up to `timeout`.
    func send(_ bytes: UnsafeRawBufferPointer, timeout: Duration) throws(ReplicationError) {
        if let tls {
            do {
                return try tls.send(bytes, timeout: timeout)
            } catch {
                throw Self.replicationError(error, peer: peer)
            }
        }
        do throws(HTTPError) {
            try socket.send(bytes, stall: timeout)
        } catch {
            // HTTPSocket.send throws `.timeout` when the peer stops reading, `.clientGone` when the connection failed.
            throw error == .timeout ? .timeout(peer) : .connectionReset(peer)
        }
    }

    func send(_ bytes: [UInt8], timeout: Duration) throws(ReplicationError) {
        let result: Result<Void, ReplicationError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ReplicationError) in try send(raw, timeout: timeout) }
        }
        try result.get()
    }

    /// True when the peer has closed its side (a pooled connection the server timed out). Bytes waiting on an
    /// idle connection are not ours either (and a look a signal cut short proves nothing): the connection is
    /// unusable.
    func isPeerClosed() -> Bool {
        if let tls { return tls.isPeerClosed() }
        return socket.peerState() != .quiet
    }

    /// Wakes a thread blocked on this socket (cancel).
    func shutdown() { socket.shutdown() }

    func close() {
        tls?.sendCloseNotify()
        socket.close()
    }
}
