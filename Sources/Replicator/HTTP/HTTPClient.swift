import CouchWire
import Synchronization

/// The replicator's HTTP/1.1 client for one peer: keep-alive connections in a small pool, request and
/// response bodies streamed, every wait bounded, and failures reported as `ReplicationError`s that say
/// what happened (refused, reset, timed out). Redirects are returned as responses, never followed.
///
/// Written on POSIX sockets like the server engine (and reusing its chunked decoder), so the replicator
/// has no dependency beyond the toolchain, and a local database is reached through the same code over
/// an in-process socket pair.
public final class HTTPClient: Sendable {
    /// How a connection to the peer is made.
    public enum Peer: Sendable {
        case tcp(host: String, port: Int)
        /// A connected descriptor from an in-process server (`HTTPLocalServer.connect`).
        case local(name: String, connect: @Sendable () -> Int32?)
    }

    public let peer: Peer
    /// Set for an `https://` peer: every connection is TLS, its certificate checked as the context's trust says.
    public let tls: TLSContext?
    private let hostHeader: String
    private let maxIdle: Int
    private let connectTimeout: Duration
    private let state = Mutex<State>(State())

    private struct State: ~Copyable {
        var idle: [ClientConnection] = []
        var active: [ObjectIdentifier: ClientSocket] = [:]
        var cancelled = false
        /// Set by `interrupt()`: new connections are shut at once until `resume()`.
        var interrupted = false
    }

    public init(
        peer: Peer, tls: TLSContext? = nil, maxIdleConnections: Int = 4, connectTimeout: Duration = .seconds(10)
    ) {
        self.peer = peer
        self.tls = tls
        self.maxIdle = maxIdleConnections
        self.connectTimeout = connectTimeout
        switch peer {
        case .tcp(let host, let port): hostHeader = "\(host):\(port)"
        case .local: hostHeader = "localhost"
        }
    }

    deinit {
        state.withLock { state in
            for connection in state.idle { connection.close() }
            state.idle.removeAll()
        }
    }

    /// A client for the same peer with the same settings and none of this one's connections or state (a cancel, an
    /// interrupt): what each run of a scheduled job talks through, so that stopping one run cannot touch the next.
    public func fresh() -> HTTPClient {
        HTTPClient(peer: peer, tls: tls, maxIdleConnections: maxIdle, connectTimeout: connectTimeout)
    }

    /// The peer as a person would name it in an error message.
    public var peerName: String {
        switch peer {
        case .tcp(let host, let port): "\(host):\(port)"
        case .local(let name, _): name
        }
    }

    /// Stops every request in flight (their reads fail at once) and refuses new ones.
    public func cancel() {
        state.withLock { state in
            state.cancelled = true
            for socket in state.active.values { socket.shutdown() }
            for connection in state.idle { connection.close() }
            state.idle.removeAll()
        }
    }

    /// Stops every request in flight and the ones that follow (their reads fail at once) until `resume()`:
    /// a replication that stops uses it to leave a long-poll or a transfer, then resumes to checkpoint.
    public func interrupt() {
        state.withLock { state in
            state.interrupted = true
            for socket in state.active.values { socket.shutdown() }
            for connection in state.idle { connection.close() }
            state.idle.removeAll()
        }
    }

    /// Ends an `interrupt()`: requests work again.
    public func resume() { state.withLock { $0.interrupted = false } }

    /// Sends a request and reads the response head; the body is read from the returned response.
    /// A pooled connection the peer has closed meanwhile is replaced transparently (once).
    public func send(_ request: ClientRequest) throws(ReplicationError) -> ClientResponse {
        let (connection, reused) = try checkOut()
        do {
            return try exchange(request, on: connection)
        } catch let error {
            connection.close()
            closed(connection)
            guard reused, case .connectionReset = error else { throw error }
            // A keep-alive connection can be closed by the server just as it is reused.
            let fresh = try connect()
            track(fresh)
            do {
                return try exchange(request, on: fresh)
            } catch {
                fresh.close()
                closed(fresh)
                throw error
            }
        }
    }

    private func exchange(_ request: ClientRequest, on connection: ClientConnection) throws(ReplicationError)
        -> ClientResponse
    {
        var head = "\(request.method) \(request.target) HTTP/1.1\r\nHost: \(hostHeader)\r\n"
        for (name, value) in request.headers {
            head += "\(name): \(value.filter { $0 != "\r" && $0 != "\n" })\r\n"
        }
        switch request.body {
        case .none:
            if ["POST", "PUT"].contains(request.method) { head += "Content-Length: 0\r\n" }
            head += "\r\n"
            try connection.socket.send(Array(head.utf8), timeout: request.timeout)
        case .bytes(let bytes):
            head += "Content-Length: \(bytes.count)\r\n\r\n"
            var out = Array(head.utf8)
            out.append(contentsOf: bytes)
            try connection.socket.send(out, timeout: request.timeout)
        case .stream(let produce):
            head += "Transfer-Encoding: chunked\r\n\r\n"
            try connection.socket.send(Array(head.utf8), timeout: request.timeout)
            let writer = BodyWriter(socket: connection.socket, timeout: request.timeout)
            do {
                try produce(writer)
                try writer.finish()
            } catch let error as ReplicationError {
                throw error
            } catch {
                throw .protocolError("request body: \(error)")
            }
        }
        let path = request.target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.target
        let deadline = ReplyDeadline(
            timeout: request.timeout, what: "\(request.method) \(path)", peer: connection.socket.peer)
        let responseHead = try connection.readHead(timeout: request.timeout, deadline: deadline)
        return ClientResponse(
            head: responseHead, method: request.method, connection: connection, client: self, timeout: request.timeout,
            deadline: deadline)
    }

    /// A connection from the pool, or a new one.
    private func checkOut() throws(ReplicationError) -> (ClientConnection, reused: Bool) {
        let pooled: ClientConnection?? = state.withLock { state in
            if state.cancelled { return .some(nil) }
            if state.interrupted { return nil }
            while let connection = state.idle.popLast() {
                if connection.socket.isPeerClosed() || connection.hasBufferedBytes {
                    connection.close()
                    continue
                }
                state.active[ObjectIdentifier(connection)] = connection.socket
                return connection
            }
            return nil
        }
        switch pooled {
        case .some(nil): throw .cancelled
        case .some(.some(let connection)): return (connection, true)
        case .none:
            let connection = try connect()
            track(connection)
            return (connection, false)
        }
    }

    private func connect() throws(ReplicationError) -> ClientConnection {
        switch peer {
        case .tcp(let host, let port):
            let socket = try ClientSocket.connect(host: host, port: port, timeout: connectTimeout)
            if let tls {
                do {
                    try socket.startTLS(context: tls, host: host, timeout: connectTimeout)
                } catch {
                    socket.close()
                    throw error
                }
            }
            return ClientConnection(socket: socket)
        case .local(let name, let connect):
            guard let descriptor = connect() else { throw .unreachable(name) }
            return ClientConnection(socket: ClientSocket(descriptor: descriptor, peer: name))
        }
    }

    private func track(_ connection: ClientConnection) {
        let cancelled = state.withLock { state in
            state.active[ObjectIdentifier(connection)] = connection.socket
            return state.cancelled || state.interrupted
        }
        if cancelled { connection.socket.shutdown() }
    }

    /// A response read to its end hands its connection back.
    func release(_ connection: ClientConnection) {
        let keep = state.withLock { state in
            state.active[ObjectIdentifier(connection)] = nil
            guard !state.cancelled, !state.interrupted, state.idle.count < maxIdle else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { connection.close() }
    }

    /// A connection closed without being released.
    func closed(_ connection: ClientConnection) {
        state.withLock { state in _ = state.active.removeValue(forKey: ObjectIdentifier(connection)) }
    }
}
