import Synchronization

/// Accounts the server itself holds in memory, outside `_users`: the one-time users of
/// `couchlite receive` (whose credentials travel in a QR code).
///
/// The `Authenticator` looks names up in a fixed order: server admins, then these, then `_users`,
/// so no `_users` document can shadow one. A name held once stays reserved for the life of the
/// process after it is released: `_users` refuses documents with a reserved name (whoever writes
/// them), so nobody can re-create a one-time identity that a database's `_security` may still list.
final class ServerIdentities: Sendable {
    private struct State {
        var accounts: [ExactName: (account: Authenticator.Account, until: ContinuousClock.Instant?)] = [:]
        var reserved: Set<ExactName> = []
    }

    private let state = Mutex(State())

    /// Holds an identity (replacing one of that name) and reserves its name.
    /// - Parameter until: when it stops being accepted by itself (nil: until released).
    func hold(_ account: Authenticator.Account, until: ContinuousClock.Instant? = nil) {
        state.withLock {
            $0.accounts[account.name] = (account, until)
            $0.reserved.insert(account.name)
        }
    }

    /// Stops accepting the identity; its name stays reserved.
    func release(_ name: ExactName) {
        state.withLock { _ = $0.accounts.removeValue(forKey: name) }
    }

    /// The identity of that exact name while it is held and not past its time.
    func account(named name: ExactName) -> Authenticator.Account? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let held = state.accounts[name], held.until.map({ now < $0 }) ?? true else { return nil }
            return held.account
        }
    }

    /// Whole seconds until the identity stops being accepted by itself (rounded up, at least 1), nil when it is
    /// not held now or has no end.
    func secondsLeft(_ name: ExactName) -> Int? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let held = state.accounts[name], let until = held.until, now < until else { return nil }
            let left = (until - now).components
            return max(1, Int(clamping: left.seconds) &+ (left.attoseconds > 0 ? 1 : 0))
        }
    }

    /// Whether the name is or was held by the server (then `_users` may not use it).
    func isReserved(_ name: ExactName) -> Bool {
        state.withLock { $0.reserved.contains(name) }
    }
}
