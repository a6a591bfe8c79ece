#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One connected, non-blocking TCP socket (or one end of an in-process socket pair); every wait goes through `poll`
/// with a deadline, so a silent peer is a timeout, never a hang.
///
/// The one socket layer of both ends of HTTP: the server's connections, and (`package`) the replicator's client
/// connections, which `connect(host:port:timeout:)` opens and which map these outcomes to their own errors.
///
/// Only its connection thread uses it, except `shutdown()`, which the registry (or a cancelling client) may call
/// from another thread (under the registry lock, which also guards `close`, so the descriptor cannot be reused
/// meanwhile).
package final class HTTPSocket {
    package enum ReceiveOutcome: Equatable {
        case received(Int)
        case endOfStream
        case timedOut
        case failed
    }

    package let descriptor: Int32
    /// Counts the bytes this socket moves (nil: not counted, as for in-process socket pairs).
    let traffic: HTTPTraffic?
    /// False once `TCP_QUICKACK` was refused (not a TCP socket), or when the owner asked for none.
    private var acknowledgesAtOnce: Bool

    /// Adopts a connected descriptor: non-blocking, `TCP_NODELAY`.
    /// - Parameter acknowledgesAtOnce: whether a read that has to wait sets `TCP_QUICKACK` (see `acknowledgeNow`):
    ///   the server does, for clients that write requests in Nagle-held pieces; the replicator's client does not.
    package init(descriptor: Int32, traffic: HTTPTraffic? = nil, acknowledgesAtOnce: Bool = true) {
        self.descriptor = descriptor
        self.traffic = traffic
        self.acknowledgesAtOnce = acknowledgesAtOnce
        let flags = fcntl(descriptor, F_GETFL, 0)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        var one: Int32 = 1
        // Responses are buffered by the writer, so Nagle would only add latency to small flushes.
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
            _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// Receives into `buffer`, waiting until `deadline` for data.
    package func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: HTTPDeadline) -> ReceiveOutcome {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return .received(0) }
        while true {
            let count = recv(descriptor, base, buffer.count, 0)
            if count > 0 {
                traffic?.didReceive(count)
                return .received(count)
            }
            if count == 0 { return .endOfStream }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                acknowledgeNow()
                switch DescriptorWait.until(deadline, descriptor: descriptor, events: Int16(POLLIN)) {
                case .ready: continue
                case .timedOut: return .timedOut
                case .failed: return .failed
                }
            default: return .failed
            }
        }
    }

    /// Sends all of `bytes`; each wait for buffer space may last up to `stall`.
    /// - Throws: `.timeout` when the peer stops reading, `.clientGone` when the connection failed.
    package func send(_ bytes: UnsafeRawBufferPointer, stall: Duration) throws(HTTPError) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let sent = sendFlags(base + offset, bytes.count - offset)
            if sent >= 0 {
                offset += sent
                traffic?.didSend(sent)
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                switch DescriptorWait.until(.after(stall), descriptor: descriptor, events: Int16(POLLOUT)) {
                case .ready: continue
                case .timedOut: throw .timeout
                case .failed: throw .clientGone
                }
            default: throw .clientGone
            }
        }
    }

    /// Sends the ACK for what was received now rather than after the delayed-ACK timer (40 ms on Linux), and
    /// keeps acknowledging at once for a while (`TCP_QUICKACK`); called only when a read has to wait.
    ///
    /// A client with Nagle's algorithm on writes a request in pieces and sends each small piece only once
    /// the previous one is acknowledged. CouchDB's replicator is such a client (`socket_options` default
    /// `{nodelay, false}`, `_bulk_docs` streamed a document at a time): against a request/response connection,
    /// where Linux delays ACKs to piggyback them on the answer, every `_revs_diff` and `_bulk_docs` it sent
    /// waited ~40 ms for each held piece (measured: a 500-id `_revs_diff` took 46 ms at the median, 2 ms with this).
    /// A socket that is not TCP (the in-process socket pairs local databases are served over) refuses the option
    /// once and is not asked again.
    private func acknowledgeNow() {
        #if os(Linux)
            guard acknowledgesAtOnce else { return }
            var one: Int32 = 1
            let size = socklen_t(MemoryLayout<Int32>.size)
            acknowledgesAtOnce = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_QUICKACK, &one, size) == 0
        #endif
    }

    /// Non-blocking: true when the peer has closed (or reset) its side. Pending request bytes count as open.
    func isPeerClosed() -> Bool { peerState() == .closed }

    /// What a non-blocking look at the socket shows, for the two ends' different questions: the server asks
    /// whether a connection is closed (pending request bytes are the next request), a client whether an idle
    /// pooled connection is still usable (any byte the peer sent unasked makes it unusable).
    package enum PeerState: Equatable {
        /// Open, nothing to read.
        case quiet
        /// Open, with bytes to read.
        case pendingBytes
        /// Closed or reset by the peer, or the descriptor failed.
        case closed
        /// A signal cut the look short: the state is unknown.
        case interrupted
    }

    package func peerState() -> PeerState {
        var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&fds, 1, 0)
        if ready < 0 { return errno == EINTR ? .interrupted : .closed }
        if ready == 0 { return .quiet }
        if fds.revents & Int16(POLLERR | POLLNVAL) != 0 { return .closed }
        var byte: UInt8 = 0
        let peeked = recv(descriptor, &byte, 1, Int32(MSG_PEEK))
        if peeked > 0 { return .pendingBytes }
        if peeked == 0 { return .closed }
        switch errno {
        case EAGAIN, EWOULDBLOCK: return .quiet
        case EINTR: return .interrupted
        default: return .closed
        }
    }

    /// Waits until `deadline` for the first byte and returns it without consuming it; nil at end of stream,
    /// on timeout or failure.
    func peekByte(deadline: HTTPDeadline) -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK))
            if count == 1 { return byte }
            if count == 0 { return nil }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                guard case .ready = DescriptorWait.until(deadline, descriptor: descriptor, events: Int16(POLLIN)) else {
                    return nil
                }
            default: return nil
            }
        }
    }

    /// Stops both directions; a thread blocked in `poll` on this socket wakes up and sees end of stream.
    package func shutdown() { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }

    /// Closes the descriptor (a client's connection; the server's registry closes its own under its lock).
    package func close() { _ = Glibc.close(descriptor) }

    /// Sends FIN but keeps reading, so a response is not destroyed by a reset caused by unread request bytes.
    func shutdownWrite() { _ = Glibc.shutdown(descriptor, Int32(SHUT_WR)) }

    /// Ends our reading only: a thread waiting to read wakes at end of stream, and can still write (a WebSocket's
    /// CLOSE 1001 when the server shuts down).
    func shutdownRead() { _ = Glibc.shutdown(descriptor, Int32(SHUT_RD)) }

    private func sendFlags(_ pointer: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            return Glibc.send(descriptor, pointer, count, Int32(MSG_NOSIGNAL))
        #else
            return Darwin.send(descriptor, pointer, count, 0)
        #endif
    }
}

/// The one wait of the socket layer (plain sockets, TLS, a client's connect): `poll` on one descriptor until a
/// deadline, polled again after a signal for the time that is left.
enum DescriptorWait: Equatable {
    /// Ready, or POLLHUP/POLLERR: the following recv/send (or OpenSSL call) reports the real outcome.
    case ready
    case timedOut
    /// `poll` itself failed, with its errno.
    case failed(errno: Int32)

    static func until(_ deadline: HTTPDeadline, descriptor: Int32, events: Int16) -> DescriptorWait {
        var fds = pollfd(fd: descriptor, events: events, revents: 0)
        while true {
            let ready = poll(&fds, 1, deadline.remainingMilliseconds)
            if ready > 0 { return .ready }
            if ready == 0 { return .timedOut }
            let code = errno
            if code != EINTR { return .failed(errno: code) }
        }
    }
}
