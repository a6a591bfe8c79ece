import CouchCrypto
import CouchStore
import CouchWire
import Foundation
import Synchronization

/// Turns a request's credentials into a `UserContext`: the `AuthSession` cookie first, then
/// Basic auth, else anonymous — CouchDB's default handler chain (`cookie`, `default`).
///
/// Accounts are looked up by name, compared by bytes (`ExactName`), in a fixed order: the server
/// admins, then the identities the server holds itself (`ServerIdentities`, the one-time users of
/// `couchlite receive`), then `org.couchdb.user:NAME` documents of `_users`. An earlier source
/// always wins, so nothing written into `_users` can shadow an admin or a server-held identity.
///
/// Verified Basic credentials are cached (`CredentialCache`, kept while in use), keyed by a hash of the
/// name, the password and the stored hash, so a changed password never matches an old entry. Every
/// uncached check costs the same PBKDF2 work whether the name exists or not (no timing oracle), takes
/// a `LoginThrottle` turn first, and a successful one re-derives a hash weaker than the server's own
/// iterations (the transparent upgrade CouchDB 3.4 calls `upgrade_hash_on_auth`). Parallel checks of
/// the same credentials share one PBKDF2's success (`LoginFlights`).
package final class Authenticator: Sendable {
    private let admins: Mutex<ServerAdmins>
    /// One-time identities held in memory (see `ServerIdentities`).
    let identities: ServerIdentities
    /// Signs session cookies; random per data dir, kept in `<data-dir>/auth-secret`.
    let secret: [UInt8]
    /// PBKDF2 iterations of every hash the server makes (`--pbkdf2-iterations`, default 600,000).
    let iterations: Int
    private let store: Store
    let throttle = LoginThrottle()
    /// `couchlite receive`'s one-time accounts (held in `identities`), with their scope, expiry and activity.
    package let temporary: TemporaryAccounts
    private let verified = Mutex(CredentialCache())
    /// Verifications running now (see `login`).
    let flights = LoginFlights()

    /// Someone who can log in.
    struct Account: Sendable {
        enum Source: Sendable {
            case serverAdmin
            case serverHeld
            case usersDatabase
        }

        package let name: ExactName
        let roles: [ExactName]
        let hash: PasswordHash
        var source = Source.serverHeld
        /// The only database a temporary account may use (see `TemporaryAccounts`); nil for everyone else.
        var scope: String? = nil
        /// What a temporary account has written, so that its drop stays create-only.
        var drop: DropLedger? = nil
    }

    /// What authentication decided for one request.
    struct Outcome {
        var user: UserContext
        /// A fresh `AuthSession` value to send back: the cookie was more than half used.
        var refreshedCookie: String?
    }

    init(admins: ServerAdmins, secret: [UInt8], store: Store, iterations: Int = AuthLimits.pbkdf2Iterations) {
        self.admins = Mutex(admins)
        self.secret = secret
        self.store = store
        self.iterations = iterations
        let identities = ServerIdentities()
        self.identities = identities
        temporary = TemporaryAccounts(identities: identities, secret: secret, iterations: iterations)
    }

    /// Most iterations a stored hash may ask for and still be checked: the server's own, or
    /// CouchDB 3.4's 600,000 when the server uses fewer (so hashes replicated from CouchDB work).
    var maxIterations: Int { max(iterations, AuthLimits.pbkdf2Iterations) }

    /// Whether `name` is a server admin's.
    package func isServerAdmin(_ name: ExactName) -> Bool {
        admins.withLock { $0.hashes[name] != nil }
    }

    /// Reads `<data-dir>/auth-secret`, creating it (owner-only) on first start.
    static func loadSecret(dataDir: String) throws -> [UInt8] {
        let path = dataDir + "/auth-secret"
        if let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            text.count == AuthLimits.secretBytes * 2, let bytes = hexBytes(text)
        {
            return bytes
        }
        let bytes = Secrets.randomBytes(AuthLimits.secretBytes)
        try PrivateFile.write(Array(bytes.hexString.utf8), to: path)
        return bytes
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let h = hexValue(high), let l = hexValue(low) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    static var now: Int { Int(Date().timeIntervalSince1970) }

    // MARK: Accounts

    /// The account of that exact name: a server admin, else a server-held identity, else the user
    /// document `org.couchdb.user:NAME`.
    func account(named name: ExactName) -> Account? {
        if let hash = admins.withLock({ $0.hashes[name] }) {
            return Account(name: name, roles: [UserContext.adminRole], hash: hash, source: .serverAdmin)
        }
        if let held = identities.account(named: name) { return held }
        guard let users = try? store.open(App.usersDatabase),
            let revision = try? users.revision(App.userDocumentPrefix + name.text, rev: nil), !revision.deleted,
            let body = revision.body, let json = try? JSON.parse(body), case .object(let doc) = json,
            let hash = PasswordHash(doc)
        else { return nil }
        let roles = doc["roles"]?.arrayValue?.compactMap { $0.stringValue.map { ExactName($0) } } ?? []
        return Account(name: name, roles: roles, hash: hash, source: .usersDatabase)
    }

    /// Checks a name and password, after the `LoginThrottle` gave the attempt its turn.
    ///
    /// Every uncached attempt takes its turn when it arrives, before anything else, so parallel guesses queue
    /// and are counted as if each came alone (`test_login_throttle_counts_parallel_guesses`). Then, when the
    /// same bytes are being verified already (`LoginFlights`), it waits for that answer: a success is its
    /// success (it ends its turn as one), so 2,000 requests with the right password and a cold cache cost one
    /// PBKDF2 and are never refused by the queue they form; a failure shares nothing, and the attempt, if the
    /// throttle gave it a turn, verifies for itself.
    /// - Parameter client: the peer address the engine saw (the throttle counts per client).
    /// - Returns: the account, or nil when the name is unknown, the password wrong or the attempt
    ///   refused by the throttle.
    func login(name: ExactName, password: [UInt8], client: String?) -> Account? {
        let account = account(named: name)
        // Credentials verified moments ago pass without a turn: only someone who knows the password
        // gets here, so a guesser sharing the real user's address never holds the user up.
        if let account, isCached(account, password) { return account }
        let keys = LoginThrottle.keys(client: client, name: name)
        let turn = throttle.take(keys)
        guard let account else {
            guard let turn else { return nil }
            return check(nil, password, keys: keys, turn: turn)
        }
        let credentials = LoginFlights.Credentials(account, password: password)
        let (flight, leads) = flights.join(credentials, turn: turn)
        if leads {
            var result: Account? = nil
            defer { flights.land(flight, credentials, succeeded: result != nil) }
            guard let turn else { return nil }
            result = check(account, password, keys: keys, turn: turn)
            return result
        }
        // Wait for the flight's whole answer when its leader verifies no later than we could (from the same
        // client it usually does: turns are handed out in order of arrival) or when only its success can let us
        // in; else only until our own turn, so a leader throttled on another client's keys never holds us up.
        let deadline: ContinuousClock.Instant?
        switch (flight.turn, turn) {
        case (let leader?, let own?): deadline = leader <= own ? nil : own
        case (.some, nil): deadline = nil
        case (nil, let own): deadline = own  // the leader was refused: it lands at once, with a failure
        }
        let shared = flight.wait(until: deadline)
        if shared == true {
            if turn != nil { throttle.finish(keys, succeeded: true) }
            return account
        }
        guard let turn else { return nil }
        return check(account, password, keys: keys, turn: turn)
    }

    /// One attempt's own verification, once its turn (from `throttle.take`) has come; ends the turn.
    private func check(
        _ account: Account?, _ password: [UInt8], keys: [LoginThrottleTable.Key], turn: ContinuousClock.Instant
    ) -> Account? {
        LoginThrottle.wait(until: turn)
        let succeeded = verify(account, password)
        throttle.finish(keys, succeeded: succeeded)
        guard succeeded, let account else { return nil }
        if account.hash.iterations < iterations { return upgrade(account, password) }
        return account
    }

    /// The credential cache's key: name, password and the stored hash, so a new password (or an
    /// upgraded hash, or a hash whose iterations were edited) never matches an old entry.
    private func cacheKey(_ account: Account, _ password: [UInt8]) -> String {
        var key = Array(account.name.text.utf8) + [0] + password + [0] + Array(account.hash.salt.utf8) + [0]
        key += Array(account.hash.derivedKey.utf8) + [0] + Array(String(account.hash.iterations).utf8)
        return Digest.hash(.sha256, key).hexString
    }

    private func isCached(_ account: Account, _ password: [UInt8]) -> Bool {
        let key = cacheKey(account, password)
        return verified.withLock { $0.contains(key, now: ContinuousClock.now) }
    }

    /// Verifies a password, spending at least the server's own PBKDF2 work: an unknown name, a
    /// missing hash or a cheap stored hash cost as much as a real one (no timing oracle).
    private func verify(_ account: Account?, _ password: [UInt8]) -> Bool {
        guard let account else {
            PasswordHash.burnVerification(password, iterations: iterations)
            return false
        }
        let hash = account.hash
        let ok = hash.verify(password, maxIterations: maxIterations)
        let spent = (1...maxIterations).contains(hash.iterations) ? hash.iterations : 0
        if spent < iterations { PasswordHash.burnVerification(password, iterations: iterations - spent) }
        guard ok else { return false }
        remember(cacheKey(account, password), now: ContinuousClock.now)
        return true
    }

    private func remember(_ cacheKey: String, now: ContinuousClock.Instant) {
        verified.withLock { $0.remember(cacheKey, now: now) }
    }

    /// Re-derives a stored hash weaker than the server's at the server's iterations, keeping its
    /// salt (so the user's sessions stay valid). A failure to store it changes nothing: the old
    /// hash still verifies, and the next login tries again.
    private func upgrade(_ account: Account, _ password: [UInt8]) -> Account {
        let hash = account.hash.rehashed(password: password, iterations: iterations)
        switch account.source {
        case .serverHeld:
            return account
        case .serverAdmin:
            let saved: Bool = admins.withLock { admins in
                guard admins.hashes[account.name] == account.hash else { return false }
                return (try? admins.replace(account.name, hash)) != nil
            }
            guard saved else { return account }
        case .usersDatabase:
            guard storeUpgradedUserHash(account, hash) else { return account }
        }
        let upgraded = Account(name: account.name, roles: account.roles, hash: hash, source: account.source)
        remember(cacheKey(upgraded, password), now: ContinuousClock.now)
        return upgraded
    }

    /// Writes the upgraded hash as a new revision of the user's document, unless it changed meanwhile.
    private func storeUpgradedUserHash(_ account: Account, _ hash: PasswordHash) -> Bool {
        let docID = App.userDocumentPrefix + account.name.text
        guard let users = try? store.open(App.usersDatabase),
            let current = try? users.revision(docID, rev: nil), !current.deleted, let body = current.body,
            let json = try? JSON.parse(body), case .object(var doc) = json, PasswordHash(doc) == account.hash
        else { return false }
        for (key, value) in hash.userDocumentFields { doc[key] = value }
        let stubs = current.attachments.map { AttachmentRef.stub(name: $0.name, revpos: $0.revpos, digest: $0.digest) }
        let write = RevisionWrite(
            docID: docID, path: [current.rev], body: JSON.object(doc).serialized(), attachments: stubs)
        guard let result = try? users.applyEdits([write]).first, case .success = result.result else { return false }
        return true
    }

    // MARK: Requests

    /// Authenticates one request.
    /// - Throws: 400 for a malformed `Authorization` header or `AuthSession` cookie, 401
    ///   "Name or password is incorrect." for wrong Basic credentials (as CouchDB, on every route).
    func authenticate(_ headers: HTTPHeaders, client: String?) throws(CouchError) -> Outcome {
        if let value = SessionCookie.find(in: headers["Cookie"]) {
            let cookie = try SessionCookie(parsing: value)
            if let account = account(named: ExactName(cookie.name)),
                cookie.isAuthentic(secret: secret, salt: account.hash.salt)
            {
                // A drop account's cookie lives as long as the account (the receive session), which ends it: no
                // timeout of its own and no refresh (which would replace a `SameSite=Strict` cookie with a Lax one).
                if account.drop != nil {
                    let user = UserContext(
                        name: account.name, roles: account.roles, handler: "cookie", scope: account.scope,
                        drop: account.drop)
                    return Outcome(user: user)
                }
                let now = Authenticator.now
                // `issued` is the cookie's (authentic, so ours, but any Int parses): no arithmetic that traps.
                let (sum, overflow) = cookie.issued.addingReportingOverflow(AuthLimits.sessionSeconds - now)
                let timeLeft = overflow ? 0 : sum
                if timeLeft > 0 {
                    let user = UserContext(
                        name: account.name, roles: account.roles, handler: "cookie", scope: account.scope,
                        drop: account.drop)
                    let refresh =
                        timeLeft < AuthLimits.sessionSeconds / 2
                        ? SessionCookie.value(
                            name: account.name.text, issued: now, secret: secret, salt: account.hash.salt)
                        : nil
                    return Outcome(user: user, refreshedCookie: refresh)
                }
            }
        }
        guard let authorization = headers["Authorization"], authorization.hasPrefix("Basic ") else {
            return Outcome(user: .anonymous)
        }
        guard authorization.utf8.count <= AuthLimits.credentialBytes,
            let decoded = Base64.decode(authorization.utf8.dropFirst(6))
        else {
            throw .badRequest("Authorization header has invalid base64 value")
        }
        guard let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { return Outcome(user: .anonymous) }
        let nameBytes = Array(decoded[..<colon])
        let password = Array(decoded[(colon + 1)...])
        if nameBytes == [UInt8(ascii: "_")] && password == [UInt8(ascii: "_")] { return Outcome(user: .anonymous) }
        guard let name = String(validating: nameBytes, as: UTF8.self),
            let account = login(name: ExactName(name), password: password, client: client)
        else {
            throw .unauthorized("Name or password is incorrect.")
        }
        let user = UserContext(
            name: account.name, roles: account.roles, handler: "default", scope: account.scope,
            drop: account.drop)
        return Outcome(user: user)
    }

    /// The `Set-Cookie` header of a new session for an account that just logged in: a drop account's lasts as long
    /// as the account, everyone else's the session timeout.
    func sessionHeader(for account: Account, secure: Bool, sameSite: String = "Lax") -> String {
        let seconds = account.drop == nil ? AuthLimits.sessionSeconds : identities.secondsLeft(account.name) ?? 1
        return SessionCookie.header(
            newCookie(for: account), now: Authenticator.now, secure: secure, seconds: seconds, sameSite: sameSite)
    }

    /// A new session cookie value for an account that just logged in.
    func newCookie(for account: Account) -> String {
        SessionCookie.value(
            name: account.name.text, issued: Authenticator.now, secret: secret, salt: account.hash.salt)
    }
}

extension Authenticator.Outcome {
    init(user: UserContext) {
        self.init(user: user, refreshedCookie: nil)
    }
}
