import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Handles one request: reads the body incrementally and writes the response incrementally.
/// Runs on the connection's own thread and may block; it must not keep the body or writer after returning.
public typealias HTTPHandler = @Sendable (HTTPRequestHead, HTTPRequestBody, HTTPResponseWriter) -> Void

/// An HTTP/1.1 server engine over POSIX sockets ([RFC 9112](https://www.rfc-editor.org/rfc/rfc9112)).
///
/// ## Concurrency model
/// - **One accept thread** polls the listening sockets (IPv4 and/or IPv6) and a wake-up pipe used by `shutdown`.
/// - **One thread per connection**, a detached pthread with an explicit 512 KiB stack
///   (`HTTPLimits.threadStackBytes`); RSS grows only by the pages a thread touches, so 2,000 idle long-poll
///   connections cost little. Each thread owns its socket and a 16 KiB read buffer and serves requests one at a
///   time: pipelined requests are answered in order, and the handler runs on that thread with blocking I/O.
///   One slow client only ever blocks its own thread.
/// - **Blocking I/O with deadlines**: sockets are non-blocking and every wait is a `poll` bounded by a timeout:
///   `idleTimeout` between requests, `headerTimeout` for a whole request head (from its first byte, or from
///   accept for the first request — a client trickling bytes cannot hold a thread), `bodyStallTimeout` per body
///   read, `sendStallTimeout` per response write. SIGPIPE is ignored and sends use `MSG_NOSIGNAL`.
/// - **Connection cap** (`maxConnections`, default 4096, and `maxConnectionsPerAddress`, default 256 per
///   non-loopback client address): a connection over a cap is accepted, answered
///   `503 {"error":"service_unavailable",…}` with `Connection: close`, and closed at once by the accept thread,
///   so clients get a clear answer instead of hanging in the backlog, and no thread is spent on it. Once more
///   than three quarters of the slots are taken, idle keep-alive connections yield theirs after
///   `crowdedIdleTimeout` instead of `idleTimeout`.
/// - **Body deadline**: besides the per-read stall timeout, a whole body must arrive within `bodyTimeout`
///   plus one second per `minimumBodyRate` bytes received, so a trickled body cannot hold a slot for long.
/// - **Limits** (`HTTPLimits`) are checked while bytes arrive; violations answer 400/413/414/431 with a
///   CouchDB-style JSON body and `Connection: close`.
/// - **TLS** (`HTTPServerConfiguration.tls`): the connection thread runs the handshake (OpenSSL, see
///   `TLSStream`) within the first request's `headerTimeout`, then speaks through `HTTPTLSTransport`; parsing,
///   limits and timeouts are the same `HTTPTransport` code paths as for plain TCP. Over the cap, a TLS
///   connection is closed without a 503 (it could not be read mid-handshake).
/// - **WebSocket** (RFC 6455): a handler may answer `101 Switching Protocols` with
///   `HTTPResponseWriter.upgradeToWebSocket`; the connection's thread then serves the `WebSocketChannel` until the
///   handler returns, with the channel's own timers (a PING after `pingInterval` of silence, a close when it goes
///   unanswered) instead of the HTTP timeouts. A shutdown ends only its reading, so the channel wakes, says
///   CLOSE 1001 and ends at once instead of being cut at the shutdown's deadline.
/// - **Shutdown** stops accepting, wakes idle connections so they close, lets busy ones finish their current
///   request (up to a timeout), then shuts the remaining sockets down so blocked reads and writes fail.
///   Shared state lives in one lock-protected registry.
public final class HTTPServer: Sendable {
    private let configuration: HTTPServerConfiguration
    private let handler: HTTPHandler
    private let registry: HTTPConnectionRegistry
    private let wakePipe: (read: Int32, write: Int32)

    /// Creates a server; nothing is bound until `start()`.
    public init(configuration: HTTPServerConfiguration, handler: @escaping HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        registry = HTTPConnectionRegistry(
            maxConnections: max(1, configuration.maxConnections),
            maxPerAddress: max(0, configuration.maxConnectionsPerAddress),
            crowdedIdle: configuration.crowdedIdleTimeout,
            countsLoopback: configuration.perAddressLimitCountsLoopback)
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        wakePipe = (fds[0], fds[1])
    }

    deinit {
        if wakePipe.read >= 0 { close(wakePipe.read) }
        if wakePipe.write >= 0 { close(wakePipe.write) }
    }

    /// Binds and listens, then starts the accept thread.
    /// - Returns: the bound port (useful with port 0, which picks a free one).
    /// - Throws: `HTTPServerError` when the host cannot be resolved or bound, or the server was already started.
    public func start() throws -> Int {
        signal(SIGPIPE, SIG_IGN)
        guard wakePipe.read >= 0 else { throw HTTPServerError.cannotStartThread }
        let (descriptors, port) = try HTTPListener.bind(
            hosts: [configuration.host] + configuration.extraHosts, port: configuration.port)
        guard registry.markRunning() else {
            for descriptor in descriptors { close(descriptor) }
            throw HTTPServerError.notStartable
        }
        let started = HTTPThread.spawn { [self] in acceptLoop(descriptors) }
        guard started else {
            for descriptor in descriptors { close(descriptor) }
            registry.acceptThreadExited()
            _ = registry.beginShutdown()
            registry.waitForAllThreads(until: nil)
            throw HTTPServerError.cannotStartThread
        }
        return port
    }

    /// Number of connections currently open.
    public var openConnections: Int { registry.openConnections }

    /// Graceful shutdown: stops accepting, closes idle connections, lets in-flight requests finish for up to
    /// `timeout`, then shuts the remaining sockets down (their handlers see `.clientGone` or `isPeerClosed()`).
    /// Returns when every connection thread has ended, or after a further `timeout` if a handler does not notice.
    /// - Returns: the requests still running when their sockets were shut down.
    @discardableResult
    public func shutdown(timeout: Duration) -> [HTTPCutRequest] {
        shutdown(until: .now + timeout, grace: timeout)
    }

    /// `shutdown(timeout:)` with the wait for in-flight requests ending at `deadline`, and `grace` for the threads
    /// of the requests cut to end. A process with several listeners takes the steps itself, to give them all one
    /// deadline: `stopAccepting`, `waitForRequests`, `cutRequests`, `waitForConnections`.
    @discardableResult
    public func shutdown(until deadline: ContinuousClock.Instant, grace: Duration) -> [HTTPCutRequest] {
        stopAccepting()
        waitForRequests(until: deadline)
        let cut = cutRequests()
        waitForConnections(until: .now + grace)
        return cut
    }

    /// The first step of a shutdown: no new connection is accepted and idle ones close; requests in flight go on.
    public func stopAccepting() {
        guard registry.beginShutdown() else { return }
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    /// Waits until no request is in flight (connections that become idle meanwhile close), or until `deadline`.
    public func waitForRequests(until deadline: ContinuousClock.Instant) {
        registry.waitForBusyConnections(until: Self.date(deadline))
    }

    /// Shuts every connection's socket down, so the handlers still running see their client gone.
    /// - Returns: the requests that were in flight, longest-running first.
    public func cutRequests() -> [HTTPCutRequest] { registry.shutdownAllSockets() }

    /// Waits until every connection thread has ended, or until `deadline`.
    /// - Returns: whether they all have.
    @discardableResult
    public func waitForConnections(until deadline: ContinuousClock.Instant) -> Bool {
        registry.waitForAllThreads(until: Self.date(deadline))
        return registry.remainingConnections == 0
    }

    private static func date(_ instant: ContinuousClock.Instant) -> Date {
        let left = instant - .now
        return Date(timeIntervalSinceNow: left <= .zero ? 0 : Double(left.clampedNanoseconds) / 1e9)
    }

    /// Connection threads still running (after a shutdown: those whose handlers did not notice the cut).
    public var remainingConnections: Int { registry.remainingConnections }

    /// Blocks until shutdown has completed and every thread has ended.
    public func waitUntilStopped() { registry.waitUntilStopped() }

    // MARK: - Accepting

    private func acceptLoop(_ descriptors: [Int32]) {
        var fds = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        fds.append(pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0))
        loop: while true {
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if fds[fds.count - 1].revents != 0 || registry.isShuttingDown { break }
            for index in 0..<(fds.count - 1) where fds[index].revents != 0 {
                acceptPending(on: fds[index].fd)
            }
        }
        for descriptor in descriptors { close(descriptor) }
        registry.acceptThreadExited()
    }

    /// Accepts every pending connection on a listening socket.
    private func acceptPending(on listener: Int32) {
        while true {
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &peerLength) }
            }
            if client < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: back off briefly instead of spinning on a ready listener.
                    usleep(10_000)
                    return
                default: return
                }
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let socket = HTTPSocket(descriptor: client, traffic: configuration.traffic)
            let address = HTTPServer.numericHost(&peer, peerLength)
            guard let id = registry.register(socket, address: address) else {
                refuseOverCapacity(socket)
                // Over one address's share is no reason to stop accepting the others queued.
                continue
            }
            let connection = HTTPConnection(
                socket: socket, id: id, configuration: configuration, registry: registry, handler: handler,
                remoteAddress: address)
            if !HTTPThread.spawn({ connection.run() }) {
                registry.removeAndClose(id, socket: socket)
            }
        }
    }

    /// The numeric host of a peer address (`getnameinfo` with `NI_NUMERICHOST`, no DNS).
    static func numericHost(_ address: inout sockaddr_storage, _ length: socklen_t) -> String? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard rc == 0 else { return nil }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Answers 503 without blocking the accept thread, then closes. On a TLS port it only closes: a plain
    /// answer would be garbage to a client in the middle of its handshake, and a handshake would block.
    private func refuseOverCapacity(_ socket: HTTPSocket) {
        guard configuration.tls == nil else {
            close(socket.descriptor)
            return
        }
        let response = HTTPStatus.errorResponse(.serviceUnavailable, serverHeader: configuration.serverHeader)
        try? socket.send(response, stall: .zero)
        socket.shutdownWrite()
        // Discard request bytes already queued, so closing does not turn into a reset that hides the 503.
        var scratch = [UInt8](repeating: 0, count: 4096)
        _ = recv(socket.descriptor, &scratch, scratch.count, Int32(MSG_DONTWAIT))
        close(socket.descriptor)
    }
}
