/// Sizes and times of authentication (CouchDB's `[chttpd_auth]` defaults where it has one).
package enum AuthLimits {
    /// PBKDF2-SHA256 iterations for new password hashes by default: OWASP's recommendation and
    /// CouchDB 3.4's `[chttpd_auth] iterations` (about half a second per hash on a small machine;
    /// verified Basic credentials are cached, so it is paid once per login, not per request).
    /// `--pbkdf2-iterations` changes it (tests lower it to stay quick).
    static let pbkdf2Iterations = 600_000
    /// Range `--pbkdf2-iterations` accepts.
    package static let configurablePBKDF2Iterations = 1_000...10_000_000
    /// Session cookie lifetime, in seconds (`[chttpd_auth] timeout`, default 600), at most `longestSessionSeconds`.
    static var sessionSeconds: Int { min(Limits.live.sessionSeconds.value, longestSessionSeconds) }
    /// The longest a session lasts whatever `[chttpd_auth] timeout` says (2^31-1 s, 68 years): CouchDB takes any
    /// integer, and a timeout of 2^63-1 means "never expires", which this is, while `issued + timeout` and the
    /// cookie's Expires date stay far inside an Int and a `time_t`.
    static let longestSessionSeconds = Int(Int32.max)
    /// Verified Basic credentials are remembered this long, in seconds, so that Basic auth on
    /// every request does not cost one PBKDF2 each.
    static let credentialCacheSeconds = 300
    /// Most remembered credentials; the cache is emptied when it would grow past this.
    static let credentialCacheEntries = 1024
    /// Longest `Authorization` header value or `AuthSession` cookie we look at, in bytes;
    /// longer ones are refused with 400.
    static let credentialBytes = 8 * 1024
    /// Failed logins for one (client, name) that go unpunished within `failureWindowSeconds`.
    static let freeFailures = 5
    /// Failed logins from one client, whatever the names, that go unpunished within the window
    /// (guessing across many made-up names is throttled per address as well).
    static let freeClientFailures = 30
    /// How long a failed login is remembered, in seconds.
    static let failureWindowSeconds = 300
    /// Spacing between attempts once the free failures are used up, in milliseconds; doubles per
    /// further failure.
    static let failureBaseDelayMilliseconds = 200
    /// Longest spacing between two attempts on one throttled key, in milliseconds.
    static let failureMaxDelayMilliseconds = 4_000
    /// Longest an attempt waits for its turn, in milliseconds; one that would wait longer (many
    /// guesses in parallel) is refused unverified.
    static let failureMaxWaitMilliseconds = 8_000
    /// Most keys the failure tracker remembers (each about 100 bytes); when full, the key with the
    /// fewest failures goes, so made-up names cannot push a throttled key out.
    static let failureEntries = 8192
    /// Bytes of a generated server admin password (hex-encoded, so twice as many characters).
    static let generatedPasswordBytes = 16
    /// Bytes of the cookie-signing secret.
    static let secretBytes = 32
}
