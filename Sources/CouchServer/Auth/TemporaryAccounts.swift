import CouchCrypto
import Foundation
import Synchronization

/// `couchlite receive`'s one-time accounts: server-held identities (`ServerIdentities`, consulted after the
/// admins and before `_users`, names compared by bytes) that are confined to one database and expire.
///
/// They are not `_users` documents, so nobody can re-create or extend one through `_users` (their names stay
/// reserved), and a user document with the same name never inherits their access: the access comes from the
/// account's `scope`, not from the database's `_security`. Only the password's PBKDF2 hash is kept. What
/// their clients do is counted here too, for `receive --once`.
package final class TemporaryAccounts: Sendable {
    private let identities: ServerIdentities
    /// PBKDF2 iterations of the hashes made, the server's own (`--pbkdf2-iterations`).
    private let iterations: Int
    private let activities = Mutex<[ExactName: Activity.State]>([:])

    /// Signs the session cookies of `signInCookie` (the server's cookie secret).
    private let secret: [UInt8]

    init(
        identities: ServerIdentities, secret: [UInt8] = Secrets.randomBytes(AuthLimits.secretBytes),
        iterations: Int = AuthLimits.pbkdf2Iterations
    ) {
        self.identities = identities
        self.secret = secret
        self.iterations = iterations
    }

    /// Adds an account, valid until `expires`, that may only push into `database`; with `httpsOnly`, its
    /// credentials are refused on plain HTTP; it may store at most `maxBytes`; its ledger is bounded by `limits`.
    /// - Returns: What the account writes (`DropLedger`), for the session's summary.
    @discardableResult
    package func add(
        name: String, password: [UInt8], database: String, expires: ContinuousClock.Instant, httpsOnly: Bool = false,
        maxBytes: Int = .max, limits: DropLedger.Limits = DropLedger.Limits()
    ) -> DropLedger {
        let ledger = DropLedger(httpsOnly: httpsOnly, maxBytes: maxBytes, limits: limits)
        let account = Authenticator.Account(
            name: ExactName(name), roles: [], hash: PasswordHash.make(password: password, iterations: iterations),
            source: .serverHeld,
            scope: database, drop: ledger)
        activities.withLock { $0[ExactName(name)] = Activity.State() }
        identities.hold(account, until: expires)
        return ledger
    }

    /// Ends an account now: from the next request on, its credentials and cookies get 401.
    package func revoke(_ name: String) {
        identities.release(ExactName(name))
    }

    /// The live account of exactly that name (bytes), nil when there is none or it has expired.
    func account(named name: String) -> Authenticator.Account? {
        identities.account(named: ExactName(name))
    }

    /// The `Set-Cookie` header that signs a browser in as the live account `name` (the drop page's sign-in by token,
    /// `SignInTokens`): `AuthSession`, `HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS, kept by the browser until
    /// the account ends (which also ends its use: the server no longer knows the account); nil when it has ended.
    /// It is the account's cookie, so it permits exactly what the account's credentials permit.
    package func signInCookie(for name: String, secure: Bool) -> String? {
        guard let account = account(named: name), let seconds = identities.secondsLeft(account.name) else {
            return nil
        }
        let now = Authenticator.now
        let value = SessionCookie.value(name: account.name.text, issued: now, secret: secret, salt: account.hash.salt)
        return SessionCookie.header(value, now: now, secure: secure, seconds: seconds, sameSite: "Strict")
    }

    /// Whether some account (live or not) has had this name, so a new one never reuses it.
    package func contains(_ name: String) -> Bool {
        identities.isReserved(ExactName(name))
    }

    // MARK: Activity

    /// What an account's clients have been doing, for `receive --once` to tell when a push is complete.
    package struct Activity: Sendable, Equatable {
        /// Requests being answered now.
        package var inFlight: Int
        /// When the last request ended (nil: none yet).
        package var lastEnded: ContinuousClock.Instant?
        /// Whether a `_local` checkpoint write has succeeded.
        package var checkpointed: Bool
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
    package struct Request {
        fileprivate let key: ExactName
        fileprivate let kind: Kind
        fileprivate let accounts: TemporaryAccounts

        enum Kind { case checkpoint, write, other }

        /// Records the answer's status.
        func end(status: Int) {
            let ok = (200..<300).contains(status)
            accounts.activities.withLock { activities in
                guard var state = activities[key] else { return }
                state.inFlight -= 1
                state.lastEnded = .now
                if ok && kind == .checkpoint { state.checkpointed = true }
                if ok && kind == .write { state.writes += 1 }
                activities[key] = state
            }
        }
    }

    /// Starts tracking a request made by `user`, when `user` is a temporary account.
    /// - Parameter drop: What the request's route lets the account do (its checkpoints, its uploads).
    package func begin(_ user: UserContext, method: HTTPMethod?, drop: DropScope) -> Request? {
        guard user.scope != nil, let key = user.name else { return nil }
        var kind = Request.Kind.other
        if drop == .checkpoint && method == .PUT {
            kind = .checkpoint
        } else if drop == .upload {
            kind = .write
        }
        let known = activities.withLock { activities -> Bool in
            guard activities[key] != nil else { return false }
            activities[key]?.inFlight += 1
            return true
        }
        return known ? Request(key: key, kind: kind, accounts: self) : nil
    }

    /// The activity of an account so far.
    package func activity(of name: String) -> Activity? {
        activities.withLock { activities in
            guard let state = activities[ExactName(name)] else { return nil }
            return Activity(
                inFlight: state.inFlight, lastEnded: state.lastEnded, checkpointed: state.checkpointed,
                writes: state.writes)
        }
    }
}
