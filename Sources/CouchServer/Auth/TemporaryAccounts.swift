import CouchCrypto
import Foundation
import Synchronization

/// Accounts that exist only in this process's memory, each confined to one database until it expires:
/// the one-time credentials of `couchlite receive`.
///
/// They are not `_users` documents, so nobody can re-create or extend one through `_users`, and a user
/// document with the same name never inherits its access: the access comes from the account's `scope`,
/// not from the database's `_security`. Only the password's PBKDF2 hash is kept. Names are compared by
/// their UTF-8 bytes, never by Unicode equivalence.
final class TemporaryAccounts: Sendable {
    private struct Entry {
        let account: Authenticator.Account
        var expires: ContinuousClock.Instant
        var activity = Activity.State()
    }

    private let entries = Mutex<[[UInt8]: Entry]>([:])

    /// Adds an account, valid until `expires`, that may only push into `database`.
    func add(name: String, password: [UInt8], database: String, expires: ContinuousClock.Instant) {
        let account = Authenticator.Account(
            name: name, roles: [], hash: PasswordHash.make(password: password), scope: database)
        entries.withLock { $0[Array(name.utf8)] = Entry(account: account, expires: expires) }
    }

    /// Ends an account now: from the next request on, its credentials and cookies get 401.
    func revoke(_ name: String) {
        entries.withLock { $0[Array(name.utf8)]?.expires = .now }
    }

    /// The live account of exactly that name (bytes), nil when there is none or it has expired.
    func account(named name: String) -> Authenticator.Account? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[Array(name.utf8)], now < entry.expires else { return nil }
            return entry.account
        }
    }

    /// Whether some account (live or not) has this name, so a new one never reuses it.
    func contains(_ name: String) -> Bool {
        entries.withLock { $0[Array(name.utf8)] != nil }
    }

    // MARK: Activity

    /// What an account's clients have been doing, for `receive --once` to tell when a push is complete.
    struct Activity: Sendable, Equatable {
        /// Requests being answered now.
        var inFlight: Int
        /// When the last request ended (nil: none yet).
        var lastEnded: ContinuousClock.Instant?
        /// Whether a `_local` checkpoint write has succeeded.
        var checkpointed: Bool
        /// Documents written (requests to `_bulk_docs` or document `PUT`s that succeeded).
        var writes: Int

        struct State {
            var inFlight = 0
            var lastEnded: ContinuousClock.Instant?
            var checkpointed = false
            var writes = 0
        }
    }

    /// One request of a temporary account, from routing to its answer.
    struct Request {
        fileprivate let key: [UInt8]
        fileprivate let kind: Kind
        fileprivate let accounts: TemporaryAccounts

        enum Kind { case checkpoint, write, other }

        /// Records the answer's status.
        func end(status: Int) {
            let ok = (200..<300).contains(status)
            accounts.entries.withLock { entries in
                guard var entry = entries[key] else { return }
                entry.activity.inFlight -= 1
                entry.activity.lastEnded = .now
                if ok && kind == .checkpoint { entry.activity.checkpointed = true }
                if ok && kind == .write { entry.activity.writes += 1 }
                entries[key] = entry
            }
        }
    }

    /// Starts tracking a request made by `user`, when `user` is a temporary account.
    func begin(_ user: UserContext, method: String, segments: [String]) -> Request? {
        guard user.scope != nil, let name = user.name else { return nil }
        let key = Array(name.utf8)
        var kind = Request.Kind.other
        if method == "PUT", segments.count >= 2, segments[1] == "_local" || segments[1].hasPrefix("_local/") {
            kind = .checkpoint
        } else if method == "PUT" || (method == "POST" && segments.count == 2 && segments[1] == "_bulk_docs") {
            kind = .write
        }
        let known = entries.withLock { entries -> Bool in
            guard entries[key] != nil else { return false }
            entries[key]?.activity.inFlight += 1
            return true
        }
        return known ? Request(key: key, kind: kind, accounts: self) : nil
    }

    /// The activity of an account so far.
    func activity(of name: String) -> Activity? {
        entries.withLock { entries in
            guard let state = entries[Array(name.utf8)]?.activity else { return nil }
            return Activity(
                inFlight: state.inFlight, lastEnded: state.lastEnded, checkpointed: state.checkpointed,
                writes: state.writes)
        }
    }
}
