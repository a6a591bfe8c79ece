#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why the mDNS socket could not be opened.
public struct MDNSSocketError: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// The UDP socket on 0.0.0.0:5353 that mDNS uses, in the multicast group 224.0.0.251 on chosen interfaces.
///
/// SO_REUSEADDR and SO_REUSEPORT let it share the port with the machine's own responder (Avahi, if any) and with
/// other couchlite processes: every member socket receives each multicast packet.
public final class MDNSSocket: Sendable {
    public static let group: [UInt8] = [224, 0, 0, 251]
    public static let port: UInt16 = 5353

    let fd: Int32

    /// - Parameter interfaces: the interfaces whose group membership is taken (at least one must succeed).
    public init(interfaces: [MDNSInterface]) throws(MDNSSocketError) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw MDNSSocketError(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, size)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, size)
        var ttl: UInt8 = 255  // RFC 6762 §11: sent with TTL 255, so a receiver can tell it came from the link
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, 1)
        var loop: UInt8 = 1  // other processes on this machine (a second couchlite, a browser) hear us too
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &loop, 1)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = MDNSSocket.port.bigEndian
        address.sin_addr.s_addr = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw MDNSSocketError(description: "bind 0.0.0.0:5353: \(reason)")
        }
        var joined = 0
        for interface in interfaces {
            var request = ip_mreqn()
            request.imr_multiaddr.s_addr = MDNSSocket.inAddr(MDNSSocket.group)
            request.imr_address.s_addr = MDNSSocket.inAddr(interface.address)
            request.imr_ifindex = Int32(bitPattern: interface.index)
            if setsockopt(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, &request, socklen_t(MemoryLayout<ip_mreqn>.size))
                == 0
            {
                joined += 1
            }
        }
        guard joined > 0 || interfaces.isEmpty else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw MDNSSocketError(description: "joining 224.0.0.251: \(reason)")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    static func inAddr(_ bytes: [UInt8]) -> in_addr_t {
        guard bytes.count == 4 else { return 0 }
        // Network order in memory: the first byte lowest on this little- or big-endian machine alike.
        return in_addr_t(
            bigEndian: UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8
                | UInt32(bytes[3]))
    }

    /// A packet, or nil when none came within `milliseconds`.
    public func receive(milliseconds: Int32) -> (bytes: [UInt8], source: [UInt8], port: UInt16)? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, max(0, milliseconds)) > 0 else { return nil }
        // One byte more than the largest packet read, so an oversized one is seen as such (and refused).
        var buffer = [UInt8](repeating: 0, count: DNSMessage.maxPacketBytes + 1)
        var from = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { raw in
            withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, &length)
                }
            }
        }
        guard count >= 0 else { return nil }
        let host = UInt32(bigEndian: from.sin_addr.s_addr)
        let source = [UInt8(host >> 24), UInt8((host >> 16) & 0xFF), UInt8((host >> 8) & 0xFF), UInt8(host & 0xFF)]
        return (Array(buffer.prefix(count)), source, UInt16(bigEndian: from.sin_port))
    }

    /// Sends one packet; errors (an interface gone down) are left for the next announcement.
    @discardableResult
    public func send(_ bytes: [UInt8], to destination: MDNSDestination) -> Bool {
        let interface: MDNSInterface
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        switch destination {
        case .multicast(let via):
            interface = via
            target.sin_addr.s_addr = MDNSSocket.inAddr(MDNSSocket.group)
            target.sin_port = MDNSSocket.port.bigEndian
        case .unicast(let address, let port, let via):
            interface = via
            target.sin_addr.s_addr = MDNSSocket.inAddr(address)
            target.sin_port = port.bigEndian
        }
        var request = ip_mreqn()
        request.imr_address.s_addr = MDNSSocket.inAddr(interface.address)
        request.imr_ifindex = Int32(bitPattern: interface.index)
        setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &request, socklen_t(MemoryLayout<ip_mreqn>.size))
        let sent = bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(
                        fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), $0,
                        socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return sent == bytes.count
    }

    /// The IPv4 interfaces that are up, running, multicast-capable and not loopback, with their netmasks; only
    /// those holding one of `addresses` when it is not nil.
    public static func interfaces(addresses: [String]? = nil) -> [MDNSInterface] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var found: [MDNSInterface] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor, found.count < 64 {
            cursor = entry.pointee.ifa_next
            let flags = Int32(truncatingIfNeeded: entry.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_RUNNING) != 0,
                flags & Int32(IFF_LOOPBACK) == 0, flags & Int32(IFF_MULTICAST) != 0,
                let address = entry.pointee.ifa_addr, let mask = entry.pointee.ifa_netmask,
                Int32(address.pointee.sa_family) == AF_INET
            else { continue }
            let bytes = { (pointer: UnsafeMutablePointer<sockaddr>) -> [UInt8] in
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    let host = UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
                    return [
                        UInt8(host >> 24), UInt8((host >> 16) & 0xFF), UInt8((host >> 8) & 0xFF), UInt8(host & 0xFF),
                    ]
                }
            }
            let name = String(cString: entry.pointee.ifa_name)
            let interface = MDNSInterface(
                name: name, index: if_nametoindex(entry.pointee.ifa_name), address: bytes(address),
                netmask: bytes(mask))
            if interface.address.first == 169 && interface.address.dropFirst().first == 254 { continue }
            if let addresses, !addresses.contains(interface.dotted) { continue }
            found.append(interface)
        }
        return found
    }
}
