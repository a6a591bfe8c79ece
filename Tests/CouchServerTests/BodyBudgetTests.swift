import CouchWire
import Testing

@testable import CouchServer

/// Attack: many big JSON bodies at once (three parallel 64 MiB `_revs_diff` took 3 GB): the server-wide budget lets
/// bodies be parsed together only while what they may cost fits, makes the next one wait, then answers it 503.
struct BodyBudgetTests {
    static let mib = 1024 * 1024

    @Test func attack_parallel_big_bodies_beyond_the_budget_get_503() throws {
        let budget = BodyBudget(capacity: 600 * BodyBudgetTests.mib, maxWait: .milliseconds(50))
        let first = BodyReservation(budget)
        try first.cover(bodyBytes: 64 * BodyBudgetTests.mib)
        let second = BodyReservation(budget)
        try second.cover(bodyBytes: 64 * BodyBudgetTests.mib)
        #expect(budget.inUse == 2 * (64 * BodyBudgetTests.mib + JSON.memoryBudget(forInput: 64 * BodyBudgetTests.mib)))
        let third = BodyReservation(budget)
        #expect(throws: CouchError.serviceUnavailable("The server is busy reading other request bodies; retry later."))
        {
            try third.cover(bodyBytes: 64 * BodyBudgetTests.mib)
        }
        #expect(
            CouchError.serviceUnavailable("").status == 503
                && CouchError.serviceUnavailable("").error == "service_unavailable")
    }

    @Test func aReservationIsGivenBackWhenTheRequestEnds() throws {
        let budget = BodyBudget(capacity: 300 * BodyBudgetTests.mib, maxWait: .milliseconds(50))
        do {
            let request = BodyReservation(budget)
            try request.cover(bodyBytes: 64 * BodyBudgetTests.mib)
            #expect(budget.inUse > 0)
        }
        #expect(budget.inUse == 0)
        // Room again for the next one, and a chunked body growing in steps holds only what it has reached.
        let next = BodyReservation(budget)
        try next.cover(bodyBytes: 64 * 1024)
        try next.cover(bodyBytes: 128 * 1024)
        #expect(budget.inUse == 128 * 1024 + JSON.memoryBudget(forInput: 128 * 1024))
    }

    /// The largest allowed body needs more than the whole budget: it goes through alone, not while another is held.
    @Test func aBodyBiggerThanTheWholeBudgetGoesThroughAlone() throws {
        let budget = BodyBudget(capacity: 256 * BodyBudgetTests.mib, maxWait: .milliseconds(50))
        let big = BodyReservation(budget)
        try big.cover(bodyBytes: 512 * BodyBudgetTests.mib)
        let small = BodyReservation(budget)
        #expect(throws: CouchError.self) { try small.cover(bodyBytes: 1024) }
    }

    /// `[chttpd] max_http_request_size` = 2^63-1 let a declared Content-Length near it through: what it would cost
    /// wrapped negative (`&+`), so nothing was reserved and the body's buffer was then allocated at that size (1 TiB
    /// aborted the process). The cost saturates, such a body goes through only alone (and the request holds it to
    /// `Limits.heldBodyCeiling` before it gets here), and nothing else fits beside it.
    @Test func attack_a_body_of_2_63_bytes_costs_everything_not_a_negative_number() throws {
        #expect(JSON.memoryBudget(forInput: Int.max) == Int.max)
        #expect(JSON.memoryBudget(forInput: Int.max / 2) == Int.max)
        #expect(JSON.memoryBudget(forInput: 1 << 40) > 2 << 40)
        let budget = BodyBudget(capacity: 256 * BodyBudgetTests.mib, maxWait: .milliseconds(50))
        let huge = BodyReservation(budget)
        try huge.cover(bodyBytes: Int.max)
        #expect(budget.inUse == Int.max)
        let small = BodyReservation(budget)
        #expect(throws: CouchError.self) { try small.cover(bodyBytes: 1024) }
        #expect(Limits.heldBodyCeiling > 0 && Limits.heldBodyCeiling < Int.max / 2)
    }
}
