/// Sizes and times of authentication (CouchDB's `[chttpd_auth]` defaults where it has one).
enum AuthLimits {
    /// PBKDF2-SHA256 iterations for new password hashes. CouchDB 3.4 uses 600,000, which costs
    /// about a quarter of a second per login on a small machine; 100,000 is OWASP's floor for
    /// SHA-256 and keeps logins and test runs quick.
    static let pbkdf2Iterations = 100_000
    /// Most iterations a stored hash may ask for; a user document claiming more cannot log in
    /// (otherwise one crafted `_users` doc could pin a core per login attempt).
    static let maxPBKDF2Iterations = 10_000_000
    /// Session cookie lifetime, in seconds (`[chttpd_auth] timeout`, default 600).
    static let sessionSeconds = 600
    /// Verified Basic credentials are remembered this long, in seconds, so that Basic auth on
    /// every request does not cost one PBKDF2 each.
    static let credentialCacheSeconds = 300
    /// Most remembered credentials; the cache is emptied when it would grow past this.
    static let credentialCacheEntries = 1024
    /// Longest `Authorization` header value or `AuthSession` cookie we look at, in bytes;
    /// longer ones are refused with 400.
    static let credentialBytes = 8 * 1024
    /// Failed logins for one name that go unpunished within `failureWindowSeconds`.
    static let freeFailures = 5
    /// How long a failed login is remembered, in seconds.
    static let failureWindowSeconds = 300
    /// First delay once `freeFailures` is used up, in milliseconds; doubles per further failure.
    static let failureBaseDelayMilliseconds = 200
    /// Longest delay before answering a failed login, in milliseconds.
    static let failureMaxDelayMilliseconds = 4_000
    /// Most names the failure tracker remembers.
    static let failureEntries = 4096
    /// Bytes of a generated server admin password (hex-encoded, so twice as many characters).
    static let generatedPasswordBytes = 16
    /// Bytes of the cookie-signing secret.
    static let secretBytes = 32
}
