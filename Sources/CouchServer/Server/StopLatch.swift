import Dispatch
import Synchronization

/// A pause that every waiter leaves at once when the latch is released (a server stop, a deleted job), and that
/// later waits skip: unlike ``Wakeup``, whose `wake()` ends one sleep, a release ends all of them and stays.
/// Waiting blocks the thread (a dispatch group), it never polls.
package final class StopLatch: Sendable {
    private let group = DispatchGroup()
    private let released = Mutex(false)

    package init() { group.enter() }

    /// Sleeps `duration` or until `release()`; returns whether the latch is released.
    @discardableResult
    package func wait(for duration: Duration) -> Bool {
        let (seconds, attoseconds) = duration.components
        // Nanoseconds as a Double so that hours of backoff cannot overflow; beyond a year is "for ever".
        let nanos = max(0, Double(seconds) * 1e9 + Double(attoseconds) / 1e9)
        let deadline: DispatchTime = nanos < 3.2e16 ? .now() + .nanoseconds(Int(nanos)) : .distantFuture
        return group.wait(timeout: deadline) == .success
    }

    /// Ends every current and later `wait(for:)`.
    package func release() {
        let first = released.withLock { released in
            defer { released = true }
            return !released
        }
        if first { group.leave() }
    }

    package var isReleased: Bool { released.withLock { $0 } }

    deinit {
        // A dispatch group must not be freed while entered.
        release()
    }
}
