#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Creates the listening sockets for a host and port.
enum HTTPListener {
    /// Binds every address `host` resolves to (deduplicated) on one port and listens.
    ///
    /// The first address decides the port when `port` is 0. Failures on later addresses are tolerated once
    /// one succeeded: `localhost` may resolve to `::1` on a machine without IPv6.
    /// - Returns: non-blocking listening descriptors and the bound port.
    static func bind(host: String, port: Int) throws(HTTPServerError) -> (descriptors: [Int32], port: Int) {
        try bind(hosts: [host], port: port)
    }

    /// Binds every address of every host on one port: the first host must resolve and bind; later ones that do
    /// not are skipped (an interface may have gone away since it was listed).
    static func bind(hosts: [String], port: Int) throws(HTTPServerError) -> (descriptors: [Int32], port: Int) {
        let host = hosts.first ?? "127.0.0.1"
        guard (0...65535).contains(port) else { throw .cannotListen(host: host, port: port, message: "invalid port") }
        var addresses = try resolve(host, port: port)
        for extra in hosts.dropFirst() {
            for address in (try? resolve(extra, port: port)) ?? [] where !addresses.contains(address) {
                addresses.append(address)
            }
        }

        var descriptors: [Int32] = []
        var boundPort = port
        var firstError = "no usable address"
        for address in addresses {
            switch listen(on: address, port: boundPort) {
            case .success(let (descriptor, actualPort)):
                descriptors.append(descriptor)
                boundPort = actualPort
            case .failure(let message):
                if descriptors.isEmpty { firstError = message.message }
            }
        }
        guard !descriptors.isEmpty else { throw .cannotListen(host: host, port: port, message: firstError) }
        return (descriptors, boundPort)
    }

    /// The socket addresses `host` resolves to, deduplicated, in resolver order.
    private static func resolve(_ host: String, port: Int) throws(HTTPServerError) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Self.streamType
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .cannotResolve(host: host, message: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(first) }

        var addresses: [[UInt8]] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr,
                entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6
            {
                let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
                if !addresses.contains(bytes) { addresses.append(bytes) }
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }

    private struct Failure: Error {
        let message: String
    }

    private static func listen(on template: [UInt8], port: Int) -> Result<(Int32, Int), Failure> {
        var storage = sockaddr_storage()
        let length = socklen_t(template.count)
        withUnsafeMutableBytes(of: &storage) { raw in
            template.withUnsafeBytes { source in
                raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(raw.count)))
            }
        }
        let family = Int32(storage.ss_family)
        var wildcard6 = false
        withUnsafeMutablePointer(to: &storage) { pointer in
            let raw = UnsafeMutableRawPointer(pointer)
            if family == AF_INET {
                raw.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port = in_port_t(UInt16(port).bigEndian)
            } else {
                let v6 = raw.assumingMemoryBound(to: sockaddr_in6.self)
                v6.pointee.sin6_port = in_port_t(UInt16(port).bigEndian)
                wildcard6 = withUnsafeBytes(of: v6.pointee.sin6_addr) { $0.allSatisfy { $0 == 0 } }
            }
        }
        let descriptor = socket(family, Self.streamType | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failure(Failure(message: Self.lastError())) }
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            // "::" serves IPv4 too; a specific IPv6 address serves only itself.
            var v6only: Int32 = wildcard6 ? 0 : 1
            _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6only, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, length) }
        }
        guard bound == 0, Glibc.listen(descriptor, HTTPLimits.listenBacklog) == 0 else {
            let message = Self.lastError()
            close(descriptor)
            return .failure(Failure(message: message))
        }
        let flags = fcntl(descriptor, F_GETFL, 0)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &actualLength) }
        }
        let actualPort = withUnsafePointer(to: &actual) { pointer in
            let raw = UnsafeRawPointer(pointer)
            return family == AF_INET
                ? Int(UInt16(bigEndian: raw.assumingMemoryBound(to: sockaddr_in.self).pointee.sin_port))
                : Int(UInt16(bigEndian: raw.assumingMemoryBound(to: sockaddr_in6.self).pointee.sin6_port))
        }
        return .success((descriptor, actualPort))
    }

    private static var streamType: Int32 {
        #if canImport(Glibc)
            Int32(SOCK_STREAM.rawValue)
        #else
            SOCK_STREAM
        #endif
    }

    static func lastError() -> String { String(cString: strerror(errno)) }
}
