import CouchCrypto
import CouchWire
import Foundation
import RevTree
import Synchronization

/// Turns a request's credentials into a `UserContext`: the `AuthSession` cookie first, then
/// Basic auth, else anonymous — CouchDB's default handler chain (`cookie`, `default`).
///
/// Accounts are the server admins (in memory), then temporary accounts (in memory, each confined to one
/// database: `couchlite receive`'s one-time credentials), then `org.couchdb.user:NAME` documents of `_users`.
/// Verified Basic credentials are cached briefly, keyed by a hash of the name, the password and
/// the stored hash, so a changed password never matches an old entry.
final class Authenticator: Sendable {
    let admins: ServerAdmins
    /// Signs session cookies; random per data dir, kept in `<data-dir>/auth-secret`.
    let secret: [UInt8]
    private let store: Store
    let throttle = LoginThrottle()
    /// One-time accounts confined to one database, checked after the admins and before `_users`.
    let temporary = TemporaryAccounts()
    private let verified = Mutex<[String: ContinuousClock.Instant]>([:])

    /// Someone who can log in.
    struct Account: Sendable {
        let name: String
        let roles: [String]
        let hash: PasswordHash
        /// The only database a temporary account may use (see `TemporaryAccounts`); nil for everyone else.
        var scope: String? = nil
    }

    /// What authentication decided for one request.
    struct Outcome {
        var user: UserContext
        /// A fresh `AuthSession` value to send back: the cookie was more than half used.
        var refreshedCookie: String?
    }

    init(admins: ServerAdmins, secret: [UInt8], store: Store) {
        self.admins = admins
        self.secret = secret
        self.store = store
    }

    /// Reads `<data-dir>/auth-secret`, creating it on first start.
    static func loadSecret(dataDir: String) throws -> [UInt8] {
        let path = dataDir + "/auth-secret"
        if let data = FileManager.default.contents(atPath: path),
            let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            text.count == AuthLimits.secretBytes * 2, let bytes = hexBytes(text)
        {
            return bytes
        }
        let bytes = Secrets.randomBytes(AuthLimits.secretBytes)
        try Data(bytes.hexString.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        chmod(path, 0o600)
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

    /// A server admin by that name, else a live temporary account, else the user document
    /// `org.couchdb.user:NAME`.
    func account(named name: String) -> Account? {
        if let hash = admins.hashes[name] {
            return Account(name: name, roles: [UserContext.adminRole], hash: hash)
        }
        if let account = temporary.account(named: name) { return account }
        guard let users = try? store.open(App.usersDatabase),
            let revision = try? users.revision(App.userDocumentPrefix + name, rev: nil), !revision.deleted,
            let body = revision.body, let json = try? JSON.parse(body), case .object(let doc) = json,
            let hash = PasswordHash(doc)
        else { return nil }
        let roles = doc["roles"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return Account(name: name, roles: roles, hash: hash)
    }

    /// Checks a name and password, slowing down repeated failures from one client.
    /// - Parameter client: the peer address the engine saw. Failures are counted per client and name, so one
    ///   client guessing an account's password is slowed down while the same account logging in from elsewhere,
    ///   or other users behind the same address, are not.
    /// - Returns: the account, or nil when the name is unknown or the password wrong.
    func login(name: String, password: [UInt8], client: String?) -> Account? {
        let key = (client ?? "-") + " " + name
        if let account = account(named: name), verify(account, password) {
            throttle.succeeded(key)
            return account
        }
        let delay = throttle.failed(key)
        if delay > .zero {
            Thread.sleep(
                forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
        }
        return nil
    }

    private func verify(_ account: Account, _ password: [UInt8]) -> Bool {
        var key = Array(account.name.utf8) + [0] + password + [0] + Array(account.hash.salt.utf8) + [0]
        key += Array(account.hash.derivedKey.utf8)
        let cacheKey = Digest.hash(.sha256, key).hexString
        let now = ContinuousClock.now
        if let expiry = verified.withLock({ $0[cacheKey] }), expiry > now { return true }
        guard account.hash.verify(password) else { return false }
        verified.withLock { cache in
            if cache.count >= AuthLimits.credentialCacheEntries { cache.removeAll() }
            cache[cacheKey] = now + .seconds(AuthLimits.credentialCacheSeconds)
        }
        return true
    }

    // MARK: Requests

    /// Authenticates one request.
    /// - Throws: 400 for a malformed `Authorization` header or `AuthSession` cookie, 401
    ///   "Name or password is incorrect." for wrong Basic credentials (as CouchDB, on every route).
    func authenticate(_ headers: HTTPHeaders, client: String?) throws(CouchError) -> Outcome {
        if let value = SessionCookie.find(in: headers["Cookie"]) {
            let cookie = try SessionCookie(parsing: value)
            if let account = account(named: cookie.name), cookie.isAuthentic(secret: secret, salt: account.hash.salt) {
                let now = Authenticator.now
                let timeLeft = cookie.issued + AuthLimits.sessionSeconds - now
                if timeLeft > 0 {
                    let user = UserContext(
                        name: account.name, roles: account.roles, handler: "cookie", scope: account.scope)
                    let refresh =
                        timeLeft < AuthLimits.sessionSeconds / 2
                        ? SessionCookie.value(name: account.name, issued: now, secret: secret, salt: account.hash.salt)
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
            let account = login(name: name, password: password, client: client)
        else {
            throw .unauthorized("Name or password is incorrect.")
        }
        let user = UserContext(name: account.name, roles: account.roles, handler: "default", scope: account.scope)
        return Outcome(user: user)
    }

    /// A new session cookie value for an account that just logged in.
    func newCookie(for account: Account) -> String {
        SessionCookie.value(name: account.name, issued: Authenticator.now, secret: secret, salt: account.hash.salt)
    }
}

extension Authenticator.Outcome {
    init(user: UserContext) {
        self.init(user: user, refreshedCookie: nil)
    }
}
