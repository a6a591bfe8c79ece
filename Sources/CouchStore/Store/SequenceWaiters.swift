import Dispatch
import Synchronization

/// A published sequence number and the threads blocked until it passes a value: what a live feed (`_changes`,
/// `_db_updates`) waits on. Woken by ``publish(_:)``, never by polling.
///
/// Each waiter parks on a semaphore of its own kept in a list behind the lock; ``publish(_:)`` takes the whole list
/// and signals it outside the lock, so a publisher never waits for the waiters and a waiter that timed out just
/// removes itself.
public final class SequenceWaiters: Sendable {
    private struct State {
        var current: Int
        var waiters: [DispatchSemaphore] = []
    }

    private let state: Mutex<State>

    /// Starts at `current`.
    public init(_ current: Int = 0) {
        state = Mutex(State(current: current))
    }

    /// The sequence published last.
    public var current: Int { state.withLock { $0.current } }

    /// Sets the sequence; when it moved, wakes every waiter (each checks the new value itself). The same value
    /// again (a database reopened, a commit that changed no document) wakes nobody.
    public func publish(_ seq: Int) {
        wake { state in
            guard state.current != seq else { return false }
            state.current = seq
            return true
        }
    }

    /// Wakes every waiter without changing the sequence: what they wait for will not come (a database closed).
    public func wakeAll() {
        wake { _ in true }
    }

    /// Runs `change` under the lock and, when it says so, signals every waiter outside it.
    private func wake(if change: (inout State) -> Bool) {
        let waiters = state.withLock { state -> [DispatchSemaphore] in
            guard change(&state) else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.signal() }
    }

    /// Blocks until the sequence is above `seq`, ``wakeAll()`` or `timeout` (a negative one is zero); returns the
    /// sequence then. Call it off the cooperative thread pool.
    public func wait(after seq: Int, timeout: Duration) -> Int {
        let semaphore = DispatchSemaphore(value: 0)
        let ready = state.withLock { state -> Int? in
            if state.current > seq { return state.current }
            state.waiters.append(semaphore)
            return nil
        }
        if let ready { return ready }
        _ = semaphore.wait(timeout: .now() + .nanoseconds(Self.nanoseconds(timeout)))
        return state.withLock { state in
            state.waiters.removeAll { $0 === semaphore }
            return state.current
        }
    }

    /// How many threads wait now (tests).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// `timeout` in nanoseconds, 0 for a negative one and `Int.max` for one beyond it.
    static func nanoseconds(_ timeout: Duration) -> Int {
        let (seconds, attoseconds) = timeout.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return Int.max }
        let (sum, overflowSum) = product.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowSum ? Int.max : Int(sum)
    }
}
