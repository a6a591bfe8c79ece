import CouchCrypto
import CouchWire

/// A PBKDF2-SHA256 password hash with its own salt, stored the way CouchDB stores `_users`
/// documents (`password_scheme: "pbkdf2"`, `pbkdf2_prf: "sha256"`, hex `salt` and `derived_key`),
/// so that user documents replicated from CouchDB keep working.
struct PasswordHash: Sendable, Equatable {
    /// 32 hex digits; CouchDB feeds the salt's text (not its decoded bytes) to PBKDF2.
    var salt: String
    var iterations: Int
    /// 64 hex digits.
    var derivedKey: String

    /// Hashes a new password with a fresh random salt.
    static func make(password: [UInt8], iterations: Int = AuthLimits.pbkdf2Iterations) -> PasswordHash {
        let salt = Secrets.randomBytes(16).hexString
        let key = Secrets.pbkdf2SHA256(password: password, salt: Array(salt.utf8), iterations: iterations)
        return PasswordHash(salt: salt, iterations: iterations, derivedKey: key.hexString)
    }

    /// The same password and salt at `iterations` (the transparent upgrade after a successful
    /// login). Keeping the salt keeps the user's session cookies valid: their MAC is keyed by it.
    func rehashed(password: [UInt8], iterations: Int) -> PasswordHash {
        let key = Secrets.pbkdf2SHA256(password: password, salt: Array(salt.utf8), iterations: iterations)
        return PasswordHash(salt: salt, iterations: iterations, derivedKey: key.hexString)
    }

    /// Whether `password` produces this hash; compared in constant time.
    /// - Parameter maxIterations: a stored hash asking for more never verifies (and costs nothing),
    ///   so one crafted `_users` document cannot make each login attempt pin a core.
    func verify(_ password: [UInt8], maxIterations: Int) -> Bool {
        guard iterations >= 1, iterations <= maxIterations else { return false }
        let key = Secrets.pbkdf2SHA256(password: password, salt: Array(salt.utf8), iterations: iterations)
        return Secrets.constantTimeEqual(Array(key.hexString.utf8), Array(derivedKey.lowercased().utf8))
    }

    /// Spends the time of `iterations` PBKDF2 rounds without a stored hash, so that an unknown name
    /// (or a stored hash cheaper than the server's) answers as slowly as a wrong password.
    static func burnVerification(_ password: [UInt8], iterations: Int) {
        guard iterations > 0 else { return }
        _ = Secrets.pbkdf2SHA256(password: password, salt: Array("couchlite-burn".utf8), iterations: iterations)
    }

    /// The fields CouchDB writes into a user document, in its order.
    var userDocumentFields: [(String, JSON)] {
        [
            ("password_scheme", "pbkdf2"), ("pbkdf2_prf", "sha256"), ("salt", .string(salt)),
            ("iterations", .number(JSONNumber(iterations))), ("derived_key", .string(derivedKey)),
        ]
    }

    /// Reads a stored hash from a user document or the admins file.
    /// - Returns: nil unless it is a PBKDF2-SHA256 hash (older schemes cannot log in here).
    init?(_ object: JSONObject) {
        guard object["password_scheme"]?.stringValue == "pbkdf2",
            (object["pbkdf2_prf"]?.stringValue ?? "sha256") == "sha256",
            let salt = object["salt"]?.stringValue, let derivedKey = object["derived_key"]?.stringValue,
            let iterations = object["iterations"]?.intValue
        else { return nil }
        self.init(salt: salt, iterations: iterations, derivedKey: derivedKey)
    }

    init(salt: String, iterations: Int, derivedKey: String) {
        self.salt = salt
        self.iterations = iterations
        self.derivedKey = derivedKey
    }
}
