import Synchronization

/// The names this server answers to (`Host`) and serves pages as (`Origin`), against DNS rebinding: `--allowed-hosts`,
/// widened by `answerOnly(hosts:)` once `receive` knows the addresses it printed.
package final class HostPolicy: Sendable {
    private let configured: [String]
    private let bind: String
    private let list: Mutex<HostAllowList>

    init(allowedHosts: [String], bind: String) {
        configured = allowedHosts
        self.bind = bind
        list = Mutex(HostAllowList(allowedHosts))
    }

    /// Whether a request naming `host` is answered at all.
    func allows(_ host: String?) -> Bool { list.withLock { $0.allows(host) } }

    /// From now on answers only requests whose `Host` is one of `hosts` or of `--allowed-hosts` (see
    /// `HostAllowList`): `receive` calls it with the addresses it printed, against DNS rebinding.
    package func answerOnly(hosts: [String]) {
        let widened = HostAllowList(configured + hosts)
        list.withLock { $0 = widened }
    }

    /// Whether a browser's `Origin` names this server, for cross-site checks (the gallery's writes). With
    /// `--allowed-hosts` (always, for `receive`) it must be one of those names; without, it must be the
    /// request's own `Host` and that host one a page of another site cannot take over by DNS rebinding: a
    /// loopback name, the bound address, or an IP address literal. A name only the request claims (`Host:
    /// evil.example`, pointed at this server's address by its owner) is not enough.
    package func servesOrigin(_ origin: String, host: String?) -> Bool {
        let authority: Substring
        if origin.hasPrefix("http://") {
            authority = origin.dropFirst(7)
        } else if origin.hasPrefix("https://") {
            authority = origin.dropFirst(8)
        } else {
            return false
        }
        guard let (name, _) = HostAllowList.split(String(authority)) else { return false }
        let current = list.withLock { $0 }
        if current.isActive { return current.allows(String(authority)) }
        guard let host, authority == host else { return false }
        return HostAllowList.cannotBeRebound(name, bind: bind)
    }
}
