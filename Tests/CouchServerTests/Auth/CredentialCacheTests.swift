import Testing

@testable import CouchServer

/// The verified-credentials cache lives while it is used (a busy client never finds it cold) and forgets what
/// went unused for its lifetime.
@Suite struct CredentialCacheTests {
    let start = ContinuousClock.now

    @Test func anEntryUnusedForItsLifetimeIsForgotten() {
        var cache = CredentialCache()
        cache.remember("k", now: start)
        let almost = cache.contains("k", now: start + cache.lifetime - .seconds(1))
        #expect(almost)
        var unused = CredentialCache()
        unused.remember("k", now: start)
        let expired = unused.contains("k", now: start + unused.lifetime)
        #expect(!expired && unused.count == 0)
        let unknown = unused.contains("other", now: start)
        #expect(!unknown)
    }

    @Test func anEntryInUseIsRenewedBeforeItExpires() {
        var cache = CredentialCache()
        cache.remember("k", now: start)
        // Used every minute for an hour: never cold.
        for minute in 1...60 {
            let hit = cache.contains("k", now: start + .seconds(60 * minute))
            #expect(hit, "cold at minute \(minute)")
        }
        // Then left alone for a lifetime: gone.
        let later = cache.contains("k", now: start + .seconds(3600) + cache.lifetime)
        #expect(!later)
    }

    @Test func aHitEarlyInItsLifeDoesNotExtendIt() {
        var cache = CredentialCache()
        cache.remember("k", now: start)
        let early = cache.contains("k", now: start + cache.lifetime / 4)
        let end = cache.contains("k", now: start + cache.lifetime)
        #expect(early && !end)
    }

    @Test func aFullCacheIsEmptiedForANewEntry() {
        var cache = CredentialCache()
        cache.capacity = 3
        for key in ["a", "b", "c"] { cache.remember(key, now: start) }
        cache.remember("c", now: start)  // already there: nothing goes
        #expect(cache.count == 3)
        cache.remember("d", now: start)
        let kept = cache.contains("d", now: start)
        let dropped = !cache.contains("a", now: start)
        #expect(cache.count == 1 && kept && dropped)
    }
}
