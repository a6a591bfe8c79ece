#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension HTTPSocket {
    /// Why `connect(host:port:timeout:)` found no peer; the caller words it (the replicator as a
    /// `ReplicationError` that names the peer).
    package enum ConnectFailure: Error, Equatable {
        /// The last address tried refused the connection (`ECONNREFUSED`).
        case refused
        /// The last address tried did not answer within the timeout.
        case timedOut
        /// The name did not resolve, no socket could be made, or the last address failed otherwise.
        case unreachable
    }

    /// Connects to `host:port` (a name, or an IP address, bracketed or not), trying each resolved address in turn;
    /// each attempt may wait `timeout` for the handshake. The failure is that of the last address tried.
    package static func connect(
        host: String, port: Int, timeout: Duration, acknowledgesAtOnce: Bool = true
    ) throws(ConnectFailure) -> HTTPSocket {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let unbracketed = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(unbracketed, String(port), &hints, &list) == 0, let first = list else {
            throw .unreachable
        }
        defer { freeaddrinfo(list) }
        var lastFailure = ConnectFailure.unreachable
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { continue }
            let flags = fcntl(fd, F_GETFL, 0)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var rc = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen)
            if rc != 0 && errno == EINPROGRESS {
                // A failed poll counts as a timeout, as a silent peer's.
                if DescriptorWait.until(.after(timeout), descriptor: fd, events: Int16(POLLOUT)) == .ready {
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
            if rc == 0 { return HTTPSocket(descriptor: fd, acknowledgesAtOnce: acknowledgesAtOnce) }
            switch errno {
            case ECONNREFUSED: lastFailure = .refused
            case ETIMEDOUT: lastFailure = .timedOut
            default: lastFailure = .unreachable
            }
            Glibc.close(fd)
        }
        throw lastFailure
    }
}
