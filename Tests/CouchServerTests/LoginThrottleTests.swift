import Testing

@testable import CouchServer

/// Password guessing is slowed down: the throttle holds against made-up names and parallel guesses, and does not
/// lock the real user out.
@Suite struct LoginThrottleTests {
    let start = ContinuousClock.now
    let attacker = LoginThrottle.keys(client: "10.0.0.66", name: "victim")
    let realUser = LoginThrottle.keys(client: "10.0.0.7", name: "victim")

    func fail(_ table: inout LoginThrottleTable, _ keys: [LoginThrottleTable.Key], times: Int, at: Duration) {
        for _ in 0..<times {
            guard case .proceed = table.begin(keys, now: start + at) else { return }
            table.finish(keys, succeeded: false, now: start + at)
        }
    }

    @Test func freeFailuresThenSpacedTurns() {
        var table = LoginThrottleTable()
        fail(&table, attacker, times: AuthLimits.freeFailures, at: .zero)
        #expect(table.begin(attacker, now: start) == .proceed(wait: .zero))
        table.finish(attacker, succeeded: false, now: start)
        #expect(table.begin(attacker, now: start) == .proceed(wait: .milliseconds(200)))
    }

    @Test func parallelGuessesQueueAndTheRestAreRefusedUnverified() {
        var table = LoginThrottleTable()
        fail(&table, attacker, times: AuthLimits.freeFailures, at: .zero)
        var admitted = 0
        var refused = 0
        var longest = Duration.zero
        for _ in 0..<50 {  // all in flight at once: none has finished
            switch table.begin(attacker, now: start) {
            case .proceed(let wait):
                admitted += 1
                longest = max(longest, wait)
            case .refuse: refused += 1
            }
        }
        #expect(admitted <= 8)
        #expect(refused >= 42)
        #expect(longest <= .milliseconds(AuthLimits.failureMaxWaitMilliseconds))
    }

    @Test func madeUpNamesCannotFlushAThrottledKey() {
        var table = LoginThrottleTable()
        table.capacity = 64
        fail(&table, attacker, times: 8, at: .zero)
        // Far more made-up names than the table holds, from many addresses (one failure each).
        for i in 0..<1000 {
            let keys = LoginThrottle.keys(client: "10.1.\(i / 250).\(i % 250)", name: ExactName("fake\(i)"))
            fail(&table, keys, times: 1, at: .seconds(1))
        }
        #expect(table.entries.count <= 64)
        #expect(table.entries[attacker[0]]?.failures == 8)
        guard case .proceed(let first) = table.begin(attacker, now: start + .seconds(2)) else {
            Issue.record("refused")
            return
        }
        #expect(first == .zero)
        guard case .proceed(let second) = table.begin(attacker, now: start + .seconds(2)) else { return }
        #expect(second >= .milliseconds(800))
    }

    @Test func madeUpNamesFromOneClientAreThrottledPerClient() {
        var table = LoginThrottleTable()
        for i in 0..<AuthLimits.freeClientFailures {
            fail(&table, LoginThrottle.keys(client: "10.0.0.66", name: ExactName("n\(i)")), times: 1, at: .zero)
        }
        let next = LoginThrottle.keys(client: "10.0.0.66", name: "another")
        #expect(table.begin(next, now: start) == .proceed(wait: .zero))
        table.finish(next, succeeded: false, now: start)
        #expect(table.begin(next, now: start) != .proceed(wait: .zero))
    }

    @Test func realUserElsewhereIsNeverDelayedAndSuccessForgets() {
        var table = LoginThrottleTable()
        fail(&table, attacker, times: 40, at: .zero)
        #expect(table.begin(realUser, now: start) == .proceed(wait: .zero))
        table.finish(realUser, succeeded: true, now: start)
        #expect(table.entries[realUser[0]] == nil && table.entries[realUser[1]] == nil)
    }

    @Test func failuresExpireAfterTheWindow() {
        var table = LoginThrottleTable()
        fail(&table, attacker, times: 10, at: .zero)
        let later = start + .seconds(AuthLimits.failureWindowSeconds + 1)
        #expect(table.begin(attacker, now: later) == .proceed(wait: .zero))
    }

    @Test func ipv6ClientsAreCountedByTheirSlash64() {
        #expect(LoginThrottle.clientKey("2001:db8:1:2::1") == LoginThrottle.clientKey("2001:db8:1:2:ffff::9"))
        #expect(LoginThrottle.clientKey("2001:db8:1:2::1") != LoginThrottle.clientKey("2001:db8:1:3::1"))
        #expect(LoginThrottle.clientKey("::ffff:192.168.1.9") == "192.168.1.9")
        #expect(LoginThrottle.clientKey("192.168.1.9") == "192.168.1.9")
        #expect(LoginThrottle.clientKey(nil) == "-")
    }
}
