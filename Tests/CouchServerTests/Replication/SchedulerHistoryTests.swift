import CouchWire
import Dispatch
import Foundation
import Replicator
import RevTree
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

/// The pause before a retry ends at once on a stop, for every waiter, and stays ended.
@Suite struct StopLatchTests {
    @Test func aReleaseEndsEveryWaiterAtOnce() {
        let latch = StopLatch()
        let clock = ContinuousClock()
        let began = clock.now
        // Threads, as the jobs' retries wait on theirs (blocking tasks would starve the cooperative pool).
        let released = Mutex(0)
        let done = DispatchGroup()
        for _ in 0..<4 {
            done.enter()
            Thread {
                if latch.wait(for: .seconds(60)) { released.withLock { $0 += 1 } }
                done.leave()
            }.start()
        }
        Thread.sleep(forTimeInterval: 0.05)
        latch.release()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(released.withLock { $0 } == 4)
        #expect(clock.now - began < .seconds(30))
        // Later waits do not wait.
        #expect(latch.wait(for: .seconds(60)))
        #expect(latch.isReleased)
    }

    @Test func withoutAReleaseItWaitsTheWholePause() {
        let latch = StopLatch()
        let clock = ContinuousClock()
        let began = clock.now
        #expect(!latch.wait(for: .milliseconds(100)))
        // It slept (no spinning through a pause): at least the pause went by.
        #expect(clock.now - began >= .milliseconds(100))
    }

    @Test func hugeAndNegativePausesAreSafe() {
        let latch = StopLatch()
        #expect(!latch.wait(for: .seconds(-5)))
        latch.release()
        latch.release()  // a second release is harmless
        #expect(latch.wait(for: .seconds(Int64.max)))
    }
}

/// The reasons a crashed job shows, in CouchDB's words.
@Suite struct SchedulerReasonTests {
    private let source: Endpoint
    private let target: Endpoint

    init() throws {
        source = try Endpoint.remote(url: "http://admin:secret@127.0.0.1:5984/photos")
        target = try Endpoint.remote(url: "http://127.0.0.1:1/copy")
    }

    @Test func aRefusedConnectionNamesTheURLItTried() {
        let reason = ReplicationError.connectionRefused("127.0.0.1:1").schedulerReason(source: source, target: target)
        #expect(
            reason
                == #"{http_request_failed,"GET","http://127.0.0.1:1/copy/",{error,{error,{conn_failed,{error,econnrefused}}}}}"#
        )
    }

    @Test func aMissingDatabaseIsDbNotFound() {
        let reason = ReplicationError.databaseNotFound(source.redacted).schedulerReason(source: source, target: target)
        #expect(reason == "db_not_found: could not open http://127.0.0.1:5984/photos/")
    }

    @Test func aWrongPasswordNamesTheSessionAndTheUserButNotThePassword() {
        let reason = ReplicationError.unauthorized(source.display).schedulerReason(source: source, target: target)
        #expect(
            reason
                == #"{replication_auth_error,{session_request_unauthorized,"http://127.0.0.1:5984/_session","admin"}}"#)
        #expect(!reason.contains("secret"))
    }

    @Test func noCredentialsIsUnauthorizedToAccess() {
        let reason = ReplicationError.unauthorized(target.display).schedulerReason(source: source, target: target)
        #expect(reason == "unauthorized: unauthorized to access or create database http://127.0.0.1:1/copy/")
    }

    @Test func otherErrorsKeepTheirDescription() {
        let error = ReplicationError.insufficientStorage("copy")
        #expect(error.schedulerReason(source: source, target: target) == error.description)
    }

    @Test func documentErrorsFailAndPeerErrorsAreRetried() {
        #expect(ReplicationError.badRequest("x").isDocumentError)
        #expect(ReplicationError.certificateRejected("h", "pin").isDocumentError)
        #expect(!ReplicationError.databaseNotFound("x").isDocumentError)
        #expect(!ReplicationError.unauthorized("x").isDocumentError)
        #expect(!ReplicationError.connectionRefused("x").isDocumentError)
    }
}

/// The endpoints and counters `_scheduler/docs` shows for a `_replicator` document.
@Suite struct ReplicatorDocStateTests {
    @Test func urlsLoseTheirCredentialsAndFragmentAndEndInASlash() {
        #expect(ReplicatorDocState.shown("http://u:p@host:5984/db") == "http://host:5984/db/")
        #expect(ReplicatorDocState.shown(["url": "https://u:p@host/db#sha256=ab"]) == "https://host/db/")
        #expect(ReplicatorDocState.shown("http://host/db/") == "http://host/db/")
        #expect(ReplicatorDocState.shown("local-name") == "local-name")
        #expect(ReplicatorDocState.shown(nil) == nil)
        #expect(ReplicatorDocState.shown(42) == nil)
        // Not a URL Foundation can read: shown as written (no credentials can be split out of it).
        #expect(ReplicatorDocState.shown("http://a b/c") == "http://a b/c")
    }

    @Test func aRetriedJobKeepsCountingAndItsCheckpoint() {
        var earlier = ReplicationStats()
        earlier.docsRead = 5
        earlier.docsWritten = 4
        earlier.bulkGetDocs = 2
        earlier.checkpointedSeq = "5-x"
        earlier.throughSeq = "5-x"
        var now = ReplicationStats()
        now.docsRead = 1
        let total = now.carrying(earlier)
        #expect(total.docsRead == 6 && total.docsWritten == 4 && total.bulkGetDocs == 2)
        // Before the new run read its checkpoint, the old one shows.
        #expect(total.checkpointedSeq == "5-x" && total.throughSeq == "5-x")
        now.checkpointedSeq = "7-y"
        #expect(now.carrying(earlier).checkpointedSeq == "7-y")
    }

    @Test func theStateFollowsTheJob() {
        var state = ReplicatorDocState(rev: "1-a")
        state.history = SchedulerHistory()
        #expect(state.state == "pending" && state.errorCount == 0)
        state.history?.record(.started)
        state.history?.record(.crashed, reason: "r")
        #expect(state.state == "crashing" && state.errorCount == 1)
        state.outcome = .failed(reason: "bad", time: Date())
        #expect(state.state == "failed" && state.errorCount == 1)
        state.outcome = .completed(stats: .null, time: Date())
        #expect(state.state == "completed" && state.errorCount == 0)
    }
}

/// `_replicator` documents CouchDB refuses at write, with its reasons; couchlite's extensions pass.
@Suite struct ReplicatorDocumentCheckTests {
    private func reason(_ json: String) throws -> String? {
        try ReplicatorDocumentCheck.reason(#require(JSON.parse(Array(json.utf8)).objectValue))
    }

    @Test func unreadableEndpointsAreRefused() throws {
        let target = #""target":"http://h:5984/t""#
        #expect(try reason(#"{"source":"http://",\#(target)}"#) == "endpoint has an invalid url")
        #expect(try reason(#"{"source":{"url":"http://"},\#(target)}"#) == "endpoint has an invalid url")
        #expect(try reason(#"{"source":{"headers":{}},\#(target)}"#) == "endpoint has an invalid url")
        #expect(try reason(#"{"source":"http://h:port/db",\#(target)}"#) == "endpoint has an invalid url")
        #expect(try reason(#"{"source":42,\#(target)}"#) == "{error,function_clause}")
        #expect(try reason(#"{\#(target)}"#) == "Missing replicator database")
        #expect(try reason(#"{"source":null,\#(target)}"#) == "Missing replicator database")
    }

    @Test func optionsOfTheWrongTypeAreRefused() throws {
        let both = #""source":"http://h/s","target":"http://h/t""#
        #expect(try reason(#"{\#(both),"doc_ids":"d1"}"#)?.contains("`doc_ids` must be an array") == true)
        #expect(try reason(#"{\#(both),"continuous":"yes"}"#)?.contains("`continuous` must be a boolean") == true)
        #expect(try reason(#"{\#(both),"selector":[1]}"#)?.contains("`selector` must be a JSON object") == true)
        #expect(try reason(#"{\#(both),"query_params":1}"#)?.contains("`query_params` must be an object") == true)
        #expect(try reason(#"{\#(both),"filter":"nofilter"}"#) == "Invalid filter. Must match `ddocname/filtername`.")
        #expect(try reason(#"{\#(both),"filter":"a/b/c"}"#) == "Invalid filter. Must match `ddocname/filtername`.")
        #expect(try reason(#"{\#(both),"filter":"/b"}"#) == "Invalid filter. Must match `ddocname/filtername`.")
    }

    @Test func replicationsAndCouchliteExtensionsPass() throws {
        let both = #""source":"http://u:p@h:5984/s","target":"https://h/t#sha256=ab""#
        #expect(try reason(#"{\#(both),"continuous":true,"doc_ids":["a"],"filter":"d/f"}"#) == nil)
        #expect(try reason(#"{\#(both),"filter":"_selector","selector":{"a":1}}"#) == nil)
        #expect(try reason(#"{"source":"local-db","target":{"url":"https://h/t","couchlite_pin":"ab"}}"#) == nil)
    }

    @Test func deletionsDesignLocalAndFailedDocumentsAreNotChecked() {
        let bad = Array(#"{"source":"http://"}"#.utf8)
        #expect(ReplicatorDocumentCheck.refusal(RevisionWrite(docID: "x", path: [], body: bad)) != nil)
        #expect(ReplicatorDocumentCheck.refusal(RevisionWrite(docID: "x", path: [], deleted: true, body: bad)) == nil)
        #expect(ReplicatorDocumentCheck.refusal(RevisionWrite(docID: "_design/x", path: [], body: bad)) == nil)
        #expect(ReplicatorDocumentCheck.refusal(RevisionWrite(docID: "_local/x", path: [], body: bad)) == nil)
        let failed = Array(#"{"source":"http://","_replication_state":"failed"}"#.utf8)
        #expect(ReplicatorDocumentCheck.refusal(RevisionWrite(docID: "x", path: [], body: failed)) == nil)
        // A body that is no JSON object (truncated, hostile) is not this check's to refuse.
        for body in ["", "{", "[1]", String(repeating: "[", count: 10_000)] {
            #expect(ReplicatorDocumentCheck.refusal(RevisionWrite(docID: "x", path: [], body: Array(body.utf8))) == nil)
        }
    }
}
