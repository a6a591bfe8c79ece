import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CouchStore

/// `SequenceWaiters`: what `_changes` and `_db_updates` feeds block on.
@Suite struct SequenceWaitersTests {
    @Test func aSequenceAlreadyPastReturnsAtOnce() {
        let waiters = SequenceWaiters(5)
        let started = ContinuousClock.now
        #expect(waiters.wait(after: 4, timeout: .seconds(30)) == 5)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(waiters.waiting == 0)
    }

    @Test func aPublishWakesTheWaiter() {
        let waiters = SequenceWaiters()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { waiters.publish(1) }
        let started = ContinuousClock.now
        #expect(waiters.wait(after: 0, timeout: .seconds(30)) == 1)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(waiters.waiting == 0)
    }

    @Test func aTimeoutReturnsTheUnchangedSequenceAndLeavesNoWaiter() {
        let waiters = SequenceWaiters(3)
        let started = ContinuousClock.now
        #expect(waiters.wait(after: 3, timeout: .milliseconds(50)) == 3)
        #expect(ContinuousClock.now - started >= .milliseconds(50))
        #expect(waiters.waiting == 0)
    }

    /// Timeouts a request could ask for: negative ones do not wait, huge ones do not overflow the arithmetic.
    @Test func hostileTimeoutsNeitherTrapNorWaitForever() {
        #expect(SequenceWaiters.nanoseconds(.seconds(-5)) == 0)
        #expect(SequenceWaiters.nanoseconds(.milliseconds(-1)) == 0)
        #expect(SequenceWaiters.nanoseconds(.seconds(Int64.max)) == Int.max)
        #expect(SequenceWaiters.nanoseconds(.milliseconds(Int64.max)) == Int.max)
        #expect(SequenceWaiters.nanoseconds(.milliseconds(1500)) == 1_500_000_000)
        let waiters = SequenceWaiters()
        let started = ContinuousClock.now
        #expect(waiters.wait(after: 0, timeout: .seconds(-1)) == 0)
        #expect(ContinuousClock.now - started < .seconds(5))
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { waiters.publish(1) }
        #expect(waiters.wait(after: 0, timeout: .seconds(Int64.max)) == 1)
    }

    @Test func oneWakeAllWakesManyWaiters() {
        let waiters = SequenceWaiters()
        let count = 64
        let results = Mutex<[Int]>([])
        let group = DispatchGroup()
        // Threads of their own: the global queue's pool would not run this many blocked at once.
        for _ in 0..<count {
            group.enter()
            Thread {
                let seq = waiters.wait(after: 0, timeout: .seconds(30))
                results.withLock { $0.append(seq) }
                group.leave()
            }.start()
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while waiters.waiting < count && ContinuousClock.now < deadline { usleep(1000) }
        #expect(waiters.waiting == count)
        let started = ContinuousClock.now
        waiters.publish(7)
        #expect(group.wait(timeout: .now() + 20) == .success)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(results.withLock { $0 } == Array(repeating: 7, count: count))
        #expect(waiters.waiting == 0)
    }

    /// One waiter's short timeout ends while another waits on: it removes only itself, and the other is still
    /// woken by the next publish.
    @Test func aWaiterThatTimesOutLeavesTheOtherWaiting() {
        let waiters = SequenceWaiters()
        let long = DispatchSemaphore(value: 0)
        let longResult = Mutex(-1)
        DispatchQueue.global().async {
            longResult.withLock { $0 = waiters.wait(after: 0, timeout: .seconds(30)) }
            long.signal()
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while waiters.waiting < 1 && ContinuousClock.now < deadline { usleep(1000) }
        #expect(waiters.wait(after: 0, timeout: .milliseconds(30)) == 0)
        #expect(waiters.waiting == 1)
        waiters.publish(2)
        #expect(long.wait(timeout: .now() + 20) == .success)
        #expect(longResult.withLock { $0 } == 2)
    }

    /// The same sequence published again (a database closed by the open-database bound and reopened) is no news:
    /// the waiter sleeps on until the sequence moves.
    @Test func theSameSequenceAgainWakesNobody() {
        let waiters = SequenceWaiters(4)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) {
            waiters.publish(4)
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { waiters.publish(5) }
        }
        let started = ContinuousClock.now
        #expect(waiters.wait(after: 4, timeout: .seconds(30)) == 5)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
    }

    /// `wakeAll` (a database closed) ends the wait without a new sequence: the caller sees it unchanged.
    @Test func wakeAllEndsTheWaitWithTheSameSequence() {
        let waiters = SequenceWaiters(9)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { waiters.wakeAll() }
        let started = ContinuousClock.now
        #expect(waiters.wait(after: 9, timeout: .seconds(30)) == 9)
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
