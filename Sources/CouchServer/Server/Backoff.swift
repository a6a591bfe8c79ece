import CouchWire
import Dispatch

/// The pauses of a loop that tries again (a follower whose database is gone, an exporter that cannot read):
/// exponential from `initial`, doubling up to `cap`, back to `initial` after a success (`reset()`). Every loop
/// that retries waits; this is how long.
package struct Backoff: Sendable, Equatable {
    package let initial: Duration
    package let cap: Duration
    /// The pause the next `next()` returns.
    package private(set) var upcoming: Duration

    /// - Precondition: `initial` > 0 and `cap` ≥ `initial` (else `initial` is 1 ms, and `cap` is `initial`).
    package init(initial: Duration = .milliseconds(100), cap: Duration = .seconds(5)) {
        let first = initial > .zero ? initial : .milliseconds(1)
        self.initial = first
        self.cap = max(cap, first)
        upcoming = first
    }

    /// The pause before the next try; the one after is twice as long, up to `cap`.
    package mutating func next() -> Duration {
        let pause = upcoming
        upcoming = min(upcoming * 2, cap)
        return pause
    }

    /// After a success: the next failure pauses `initial` again.
    package mutating func reset() { upcoming = initial }
}

/// A pause that `wake()` ends early (a stop), without polling: `sleep(for:)` blocks on a semaphore.
package final class Wakeup: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    package init() {}

    /// Sleeps `duration` or until `wake()`; returns whether it was woken.
    @discardableResult
    package func sleep(for duration: Duration) -> Bool {
        // Saturating: `[replicator] interval` may be 2^63-1 ms, whose nanoseconds overflow an Int64.
        let nanos = Int(clamping: duration.clampedNanoseconds)
        return semaphore.wait(timeout: .now() + .nanoseconds(nanos)) == .success
    }

    /// Ends the current (or the next) `sleep(for:)`.
    package func wake() { semaphore.signal() }
}
