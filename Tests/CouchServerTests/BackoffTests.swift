import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// Every loop that tries again waits: the pauses grow from the first to the cap and start over after a success,
/// and a stop ends a pause at once.
@Suite struct BackoffTests {
    @Test func pausesDoubleUpToTheCap() {
        var backoff = Backoff(initial: .milliseconds(100), cap: .seconds(1))
        let pauses = (0..<7).map { _ in backoff.next() }
        #expect(
            pauses == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1),
                .seconds(1), .seconds(1),
            ])
    }

    @Test func theDefaultsAreAHundredMillisecondsToFiveSeconds() {
        var backoff = Backoff()
        #expect(backoff.next() == .milliseconds(100))
        for _ in 0..<100 { _ = backoff.next() }
        #expect(backoff.next() == .seconds(5))
    }

    @Test func aSuccessStartsThePausesOver() {
        var backoff = Backoff(initial: .milliseconds(50), cap: .seconds(5))
        for _ in 0..<10 { _ = backoff.next() }
        backoff.reset()
        #expect(backoff.next() == .milliseconds(50))
        #expect(backoff.next() == .milliseconds(100))
    }

    @Test func noPauseIsZeroEvenWhenAskedFor() {
        // A zero (or negative) first pause would make a spinning loop again.
        var zero = Backoff(initial: .zero, cap: .zero)
        #expect(zero.next() > .zero)
        var negative = Backoff(initial: .milliseconds(-5), cap: .seconds(1))
        #expect(negative.next() > .zero)
        // A cap below the first pause is the first pause.
        var low = Backoff(initial: .seconds(2), cap: .seconds(1))
        #expect(low.next() == .seconds(2))
        #expect(low.next() == .seconds(2))
    }

    @Test func aLongRunNeverOverflows() {
        var backoff = Backoff(initial: .milliseconds(1), cap: .seconds(3600))
        for _ in 0..<10_000 { #expect(backoff.next() <= .seconds(3600)) }
    }

    @Test func wakeEndsASleepEarly() {
        let wakeup = Wakeup()
        let started = ContinuousClock.now
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { wakeup.wake() }
        #expect(wakeup.sleep(for: .seconds(30)))
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    /// `[replicator] interval` = 2^63-1 ms: the scheduler's sleep computed its nanoseconds with a multiplication that
    /// overflowed (a trap at once); now it sleeps "forever" (136 years) and a wake still ends it.
    @Test func attack_a_sleep_of_2_63_milliseconds_does_not_trap() {
        for duration in [Duration.milliseconds(Int.max), .seconds(Int64.max), .seconds(Int64(Int32.max) * 8)] {
            let wakeup = Wakeup()
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { wakeup.wake() }
            #expect(wakeup.sleep(for: duration))
        }
        #expect(Duration.milliseconds(Int.max).clampedNanoseconds / 1_000_000_000 == 1 << 32)
        #expect(Duration.seconds(-5).clampedNanoseconds == 0)
    }

    @Test func anUnwokenSleepLastsItsDuration() {
        let wakeup = Wakeup()
        let started = ContinuousClock.now
        #expect(!wakeup.sleep(for: .milliseconds(100)))
        #expect(ContinuousClock.now - started >= .milliseconds(100))
    }
}
