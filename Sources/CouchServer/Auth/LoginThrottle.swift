import Foundation
import Synchronization

/// Slows down repeated failed logins from one client (its peer address) to one account: the first
/// `AuthLimits.freeFailures` within the window cost nothing, then each further failure waits twice
/// as long as the one before (capped), before it is answered. A delay rather than CouchDB's lockout,
/// so that a guesser cannot lock the real user out.
final class LoginThrottle: Sendable {
    private struct Entry {
        var failures: Int
        var last: ContinuousClock.Instant
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Records a failure and returns how long to wait before answering.
    func failed(_ name: String) -> Duration {
        let now = ContinuousClock.now
        let window = Duration.seconds(AuthLimits.failureWindowSeconds)
        let failures = entries.withLock { entries -> Int in
            if entries.count >= AuthLimits.failureEntries {
                entries = entries.filter { now - $0.value.last < window }
                if entries.count >= AuthLimits.failureEntries { entries.removeAll() }
            }
            var entry = entries[name] ?? Entry(failures: 0, last: now)
            if now - entry.last >= window { entry.failures = 0 }
            entry.failures += 1
            entry.last = now
            entries[name] = entry
            return entry.failures
        }
        let over = failures - AuthLimits.freeFailures
        guard over > 0 else { return .zero }
        let shift = min(over - 1, 16)
        let ms = min(AuthLimits.failureBaseDelayMilliseconds << shift, AuthLimits.failureMaxDelayMilliseconds)
        return .milliseconds(ms)
    }

    func succeeded(_ name: String) {
        entries.withLock { _ = $0.removeValue(forKey: name) }
    }
}
