import Foundation

/// The machine's addresses a phone on the same network can reach, from `getifaddrs`.
package enum LANAddresses {
    /// One usable address of one interface.
    package struct Candidate: Equatable {
        let interface: String
        package let address: String
        let isIPv6: Bool
    }

    /// Interfaces that are up, not loopback, with an IPv4 address (or a global IPv6 one; link-local
    /// addresses need a zone id no phone URL carries), private IPv4 ranges first and virtual bridges
    /// (docker, libvirt, veth) last.
    package static func candidates() -> [Candidate] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var found: [Candidate] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            let flags = Int32(entry.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_RUNNING) != 0, flags & Int32(IFF_LOOPBACK) == 0,
                let socketAddress = entry.pointee.ifa_addr
            else { continue }
            let family = Int32(socketAddress.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(socketAddress, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
                continue
            }
            let address = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let name = String(cString: entry.pointee.ifa_name)
            if family == AF_INET6 && (address.lowercased().hasPrefix("fe80") || address.contains("%")) { continue }
            if family == AF_INET && address.hasPrefix("169.254.") { continue }
            found.append(Candidate(interface: name, address: address, isIPv6: family == AF_INET6))
        }
        return found.sorted { rank($0) < rank($1) }
    }

    /// Lower is better.
    static func rank(_ candidate: Candidate) -> Int {
        let virtual = ["docker", "br-", "veth", "virbr", "vmnet", "vboxnet", "tun", "tap", "wg", "zt"]
        var rank = candidate.isIPv6 ? 2 : 0
        if !isPrivateIPv4(candidate.address) { rank += 1 }
        if virtual.contains(where: { candidate.interface.hasPrefix($0) }) { rank += 10 }
        return rank
    }

    static func isPrivateIPv4(_ address: String) -> Bool {
        let parts = address.split(separator: ".").compactMap { Int($0) }
        guard parts.count == 4 else { return false }
        return parts[0] == 10 || (parts[0] == 172 && (16...31).contains(parts[1]))
            || (parts[0] == 192 && parts[1] == 168)
    }
}
