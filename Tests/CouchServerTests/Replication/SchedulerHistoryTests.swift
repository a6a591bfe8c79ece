import CouchStore
import CouchWire
import Dispatch
import Foundation
import Replicator
import Synchronization
import Testing

@testable import CouchServer

/// A `_replicator` job's history as CouchDB's scheduler keeps it: consecutive crashes, the backoff they make, the
/// events shown and how many are kept.
@Suite struct SchedulerHistoryTests {
    private let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// A history of `added` then, for each offset in seconds, a `started` and a `crashed` that much later.
    private func crashing(_ runs: [(started: TimeInterval, crashed: TimeInterval)]) -> SchedulerHistory {
        var history = SchedulerHistory(added: start)
        for run in runs {
            history.record(.started, at: start + run.started)
            history.record(.crashed, reason: "db_not_found: could not open x", at: start + run.crashed)
        }
        return history
    }

    @Test func theBackoffDoublesFromThirtySecondsWithEachConsecutiveCrash() {
        var runs: [(TimeInterval, TimeInterval)] = []
        var pauses: [Duration] = []
        for n in 0..<5 {
            runs.append((Double(n) * 10, Double(n) * 10 + 1))
            pauses.append(crashing(runs).backoff(base: .seconds(30)))
        }
        // CouchDB's backoff_micros: 30 s · 2^(crashes − 1).
        #expect(pauses == [.seconds(30), .seconds(60), .seconds(120), .seconds(240), .seconds(480)])
        #expect(crashing(runs).consecutiveCrashes == 5)
    }

    @Test func theBackoffStopsDoublingAtTheTenthCrash() {
        // Twenty crashes a second apart (the history keeps the last twenty events: ten crashes).
        var history = SchedulerHistory(added: start)
        for n in 0..<40 {
            history.record(.started, at: start + Double(n))
            history.record(.crashed, reason: "r", at: start + Double(n) + 0.5)
        }
        #expect(history.events.count == SchedulerHistory.maxEvents)
        #expect(history.backoff(base: .seconds(30)) <= .seconds(30 * 1024))
        #expect(history.backoff(base: .seconds(30)) >= .seconds(30 * 256))
    }

    @Test func aCrashAfterAHealthyRunStartsTheCountOver() {
        // Crashed twice quickly, then ran three minutes (past the 2-minute health threshold) before crashing.
        let history = crashing([(0, 1), (31, 32), (100, 100 + 180)])
        #expect(history.consecutiveCrashes == 0)
        // Still a pause: a crash is never retried at once (no spinning).
        #expect(history.backoff(base: .seconds(30)) == .seconds(30))
    }

    @Test func aStoppedJobIsNotCrashing() {
        var history = crashing([(0, 1)])
        history.record(.started, at: start + 40)
        history.record(.stopped, at: start + 41)
        #expect(history.consecutiveCrashes == 0)
        #expect(history.crashReason == nil)
    }

    @Test func theNewestEventIsTheLastUpdateAndACrashShowsItsReason() throws {
        let history = crashing([(0, 2)])
        #expect(history.lastUpdated == start + 2)
        #expect(history.crashReason == "db_not_found: could not open x")
        let events = try #require(history.json.arrayValue)
        #expect(events.map { $0["type"]?.stringValue } == ["crashed", "started", "added"])
        #expect(events[0]["reason"]?.stringValue == "db_not_found: could not open x")
        #expect(events[1]["reason"] == nil)
        #expect(events[0]["timestamp"]?.stringValue == "2027-01-15T08:00:02Z")
    }

    @Test func aHostileFloodOfEventsKeepsTwenty() {
        var history = SchedulerHistory(added: start)
        for n in 0..<100_000 {
            history.record(.crashed, reason: String(repeating: "x", count: 10), at: start + Double(n))
        }
        #expect(history.events.count == 20)
        #expect(history.events.first?.time == start + 99_999)
    }

    @Test func aClockThatGoesBackwardsDoesNotBreakTheCount() {
        // Crash timestamps before the start (a clock step back): still consecutive, never negative.
        let history = crashing([(10, 5), (20, 1)])
        #expect(history.consecutiveCrashes == 2)
        #expect(history.backoff(base: .seconds(1)) == .seconds(2))
    }
}
