import Synchronization

/// The `Host` header values a server answers to, against DNS rebinding: a browser that was made to resolve
/// `evil.example` to this machine still sends `Host: evil.example`, and is refused.
///
/// Empty (the default) allows any host, as CouchDB does; `couchlite receive`, which knows the one address it
/// printed, narrows it. Compared case-insensitively, port included.
final class HostAllowList: Sendable {
    private let hosts = Mutex<Set<String>>([])

    /// Allows exactly these `host:port` values from now on.
    func set(_ values: [String]) {
        let lowered = Set(values.map { $0.lowercased() })
        hosts.withLock { $0 = lowered }
    }

    func allows(_ host: String?) -> Bool {
        hosts.withLock { hosts in hosts.isEmpty || host.map { hosts.contains($0.lowercased()) } == true }
    }
}
