/// Basic credentials verified recently, so that Basic auth on every request does not cost one PBKDF2 each
/// (`Authenticator`). A pure value: times are passed in, so it is tested without sleeping.
///
/// A key is a digest of the name, the password and the stored hash (`Authenticator.cacheKey`): an entry only
/// says "these bytes verified against that stored hash", which stays true as long as the hash is unchanged. A
/// new password, an upgraded hash or a deleted account never reaches an old entry (the account is looked up
/// first, on every request), so no entry needs to expire to be invalidated.
///
/// Entries are therefore kept alive while they are used: a hit in the second half of an entry's lifetime
/// pushes its expiry a whole lifetime on. Only credentials unused for `lifetime` are forgotten. With a fixed
/// expiry, a client busy on 2,000 connections (bench/soak.py) lost its entry every 5 minutes in the middle of
/// 2,000 requests, which then all waited for a new 600,000-iteration PBKDF2.
struct CredentialCache: Sendable {
    private var expiries: [String: ContinuousClock.Instant] = [:]
    var lifetime = Duration.seconds(AuthLimits.credentialCacheSeconds)
    var capacity = AuthLimits.credentialCacheEntries

    var count: Int { expiries.count }

    /// Whether `key` was verified and used within the last `lifetime`; a hit late in its life is renewed.
    package mutating func contains(_ key: String, now: ContinuousClock.Instant) -> Bool {
        guard let expiry = expiries[key] else { return false }
        guard expiry > now else {
            expiries[key] = nil
            return false
        }
        if expiry - now < lifetime / 2 { expiries[key] = now + lifetime }
        return true
    }

    /// Remembers credentials that just verified. A full cache is emptied first (its entries cost one PBKDF2
    /// each to win back, and only a client sending more than `capacity` distinct right passwords fills it).
    mutating func remember(_ key: String, now: ContinuousClock.Instant) {
        if expiries[key] == nil && expiries.count >= capacity { expiries.removeAll() }
        expiries[key] = now + lifetime
    }
}
