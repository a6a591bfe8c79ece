import CouchWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One connected, non-blocking client socket (TCP, or one end of an in-process socket pair); every wait
/// is a `poll` bounded by a timeout, so a silent peer is a clear `.timeout`, never a hang. After
/// `startTLS` every byte goes through a `TLSStream` over the same descriptor.
///
/// `@unchecked Sendable`: it is used by one thread at a time (its `ClientConnection` is checked out of the
/// client's pool by one request), and `tls`, its only mutable property, is set once by `startTLS` before the
/// connection is first pooled or tracked. The one call from another thread is `shutdown()` (cancelling), which
/// acts on the descriptor alone.
final class ClientSocket: @unchecked Sendable {
    let descriptor: Int32
    let peer: String
    /// Set once the TLS handshake has succeeded (`https://` peers).
    private(set) var tls: TLSStream?

    /// Adopts a connected descriptor (closed by `close()`).
    init(descriptor: Int32, peer: String) {
        self.descriptor = descriptor
        self.peer = peer
        let flags = fcntl(descriptor, F_GETFL, 0)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Connects to `host:port`, trying each resolved address in turn within `timeout`.
    static func connect(host: String, port: Int, timeout: Duration) throws(ReplicationError) -> ClientSocket {
        let peer = "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let unbracketed = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(unbracketed, String(port), &hints, &list) == 0, let first = list else {
            throw .unreachable(peer)
        }
        defer { freeaddrinfo(list) }
        var lastError = ReplicationError.unreachable(peer)
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { continue }
            let flags = fcntl(fd, F_GETFL, 0)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var rc = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
            if rc != 0 && errno == EINPROGRESS {
                var fds = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&fds, 1, Int32(clamping: timeout.milliseconds))
                if ready == 1 {
                    var soError: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
                    rc = soError == 0 ? 0 : -1
                    errno = soError
                } else {
                    rc = -1
                    errno = ETIMEDOUT
                }
            }
            if rc == 0 { return ClientSocket(descriptor: fd, peer: peer) }
            switch errno {
            case ECONNREFUSED: lastError = .connectionRefused(peer)
            case ETIMEDOUT: lastError = .timeout(peer)
            default: lastError = .unreachable(peer)
            }
            Glibc.close(fd)
        }
        throw lastError
    }

    /// Runs the TLS handshake with `host` (the URL's host: SNI and the name check) within `timeout`, and checks
    /// the peer's certificate as `context` says. Nothing of HTTP is sent before it has passed.
    func startTLS(context: TLSContext, host: String, timeout: Duration) throws(ReplicationError) {
        do {
            let stream = try TLSStream.client(context: context, descriptor: descriptor, host: host)
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

    /// Receives up to `buffer.count` bytes; 0 means the peer closed.
    func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(ReplicationError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        if let tls {
            do {
                return try tls.receive(into: buffer, timeout: timeout)
            } catch {
                throw Self.replicationError(error, peer: peer)
            }
        }
        while true {
            let count = recv(descriptor, base, buffer.count, 0)
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: try wait(Int16(POLLIN), timeout)
            default: throw .connectionReset(peer)
            }
        }
    }

    /// Sends every byte; each wait for buffer space may last up to `timeout`.
    func send(_ bytes: UnsafeRawBufferPointer, timeout: Duration) throws(ReplicationError) {
        guard let base = bytes.baseAddress else { return }
        if let tls {
            do {
                return try tls.send(bytes, timeout: timeout)
            } catch {
                throw Self.replicationError(error, peer: peer)
            }
        }
        var offset = 0
        while offset < bytes.count {
            let sent = Glibc.send(descriptor, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if sent >= 0 {
                offset += sent
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: try wait(Int16(POLLOUT), timeout)
            default: throw .connectionReset(peer)
            }
        }
    }

    func send(_ bytes: [UInt8], timeout: Duration) throws(ReplicationError) {
        let result: Result<Void, ReplicationError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ReplicationError) in try send(raw, timeout: timeout) }
        }
        try result.get()
    }

    /// True when the peer has closed its side (a pooled connection the server timed out).
    func isPeerClosed() -> Bool {
        if let tls { return tls.isPeerClosed() }
        var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&fds, 1, 0)
        if ready <= 0 { return ready < 0 }
        var byte: UInt8 = 0
        let peeked = recv(descriptor, &byte, 1, Int32(MSG_PEEK))
        // Bytes waiting on an idle connection are not ours either: the connection is unusable.
        return peeked >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Wakes a thread blocked on this socket (cancel).
    func shutdown() { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }

    func close() {
        tls?.sendCloseNotify()
        Glibc.close(descriptor)
    }

    private func wait(_ events: Int16, _ timeout: Duration) throws(ReplicationError) {
        var fds = pollfd(fd: descriptor, events: events, revents: 0)
        while true {
            let ready = poll(&fds, 1, Int32(clamping: timeout.milliseconds))
            if ready > 0 { return }
            if ready == 0 { throw .timeout(peer) }
            if errno != EINTR { throw .connectionReset(peer) }
        }
    }
}

extension Duration {
    /// Whole milliseconds, for `poll`.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
