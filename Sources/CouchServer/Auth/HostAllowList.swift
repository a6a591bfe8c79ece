import Foundation

/// The `Host` names a server answers to (`--allowed-hosts`), against DNS rebinding.
///
/// A page on `http://evil.example/` can point `evil.example` at the server's LAN address once it has
/// loaded; the victim's browser then sends that page's requests to the server as same-origin ones, with
/// `Host: evil.example`. Refusing hosts the server does not know itself by closes that door. Off (empty)
/// by default for `serve`, where the operator may put any name in front; `receive` knows its own
/// addresses and sets them.
///
/// An entry is a host name or address, optionally with a port: `photos.local`, `192.168.1.20`,
/// `[fe80::1]` or `::1`, `localhost:5984`. Without a port it matches the host on any port. Names compare
/// ASCII case-insensitively; a trailing dot is ignored.
package struct HostAllowList: Sendable {
    private struct Entry: Sendable {
        let host: String
        let port: String?
    }

    private let entries: [Entry]

    /// Whether any entry is set (otherwise every Host is allowed).
    var isActive: Bool { !entries.isEmpty }

    init(_ list: [String]) {
        entries = list.compactMap { HostAllowList.split($0).map { Entry(host: $0.host, port: $0.port) } }
    }

    /// Whether a request with this `Host` header may be served. A missing or malformed header is refused
    /// while the list is active.
    func allows(_ header: String?) -> Bool {
        guard isActive else { return true }
        guard let header, let (host, port) = HostAllowList.split(header) else { return false }
        return entries.contains { entry in
            entry.host == host && (entry.port == nil || entry.port == port)
        }
    }

    /// Whether `host` (as `split` gives it) names this machine in a way no DNS answer changes: a loopback name,
    /// the address the server is bound to, or an IPv4 or IPv6 address literal.
    package static func cannotBeRebound(_ host: String, bind: String) -> Bool {
        if host == "localhost" || host == bind.lowercased() || "[" + bind.lowercased() + "]" == host { return true }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            var address = in6_addr()
            return inet_pton(AF_INET6, String(host.dropFirst().dropLast()), &address) == 1
        }
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1
    }

    /// `host[:port]` → lowercased host (IPv6 in brackets) and port; nil when malformed.
    package static func split(_ text: String) -> (host: String, port: String?)? {
        let value = text.trimmingSpaces().lowercased()
        guard !value.isEmpty, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else {
            return nil
        }
        var host: Substring
        var port: Substring?
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return nil }
            host = value[...close]
            let rest = value[value.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            }
        } else if value.filter({ $0 == ":" }).count > 1 {
            host = Substring("[" + value + "]")  // a bare IPv6 literal in the list
        } else if let colon = value.firstIndex(of: ":") {
            host = value[..<colon]
            port = value[value.index(after: colon)...]
        } else {
            host = Substring(value)
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        if let port, port.isEmpty || !port.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return nil
        }
        guard !host.isEmpty else { return nil }
        return (String(host), port.map(String.init))
    }
}
