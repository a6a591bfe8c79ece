import CouchWire
import Foundation
import Testing

@testable import CouchQuery

/// Issue 35, item 2: `$regex` bounded per request (CPU across every match), compiled programs bounded per selector
/// and across the server, each match's backtracking memory bounded.
@Suite struct MangoRegexBudgetTests {
    /// A subject on which `^(a+)+$` runs into the million-step limit (~13 ms of CPU) and does not match.
    static let catastrophic = String(repeating: "a", count: 30) + "!"

    private func selector(_ text: String, memory: RegexMemory = RegexMemory(limit: 64 << 20)) throws -> Selector {
        try Selector(JSON.parse(text), regexMemory: memory)
    }

    private func document(_ value: String) -> JSON { .object(JSONObject([("s", .string(value))])) }

    /// One clause over many documents: each match is bounded alone, so without a budget this costs documents ×
    /// ~13 ms (here 2,000 documents: 26 s). The budget stops it within one match of its 50 ms.
    @Test func regexBudgetSpentAcrossDocumentsFails() throws {
        let query = try selector(#"{"s":{"$regex":"^(a+)+$"}}"#)
        let budget = RegexBudget(nanoseconds: 50_000_000)
        let started = RegexBudget.threadCPUNanoseconds()
        var examined = 0
        for _ in 0..<2_000 {
            _ = query.matches(document(Self.catastrophic), budget: budget)
            examined += 1
            if budget.isSpent { break }
        }
        #expect(budget.isSpent)
        #expect(examined < 100, "the budget ends the scan after a few documents, not 2,000")
        #expect(RegexBudget.threadCPUNanoseconds() - started < 1_000_000_000)
        // A spent budget runs nothing more: even a pattern that would match is false.
        #expect(!query.matches(document("aaa"), budget: budget))
        #expect(query.matches(document("aaa"), budget: RegexBudget()))
    }

    /// Many clauses in one document (an `$or` evaluates them all when none matches): 400 × ~13 ms without a budget.
    @Test func manyRegexClausesInOneDocumentShareTheBudget() throws {
        let clauses = Array(repeating: #"{"s":{"$regex":"^(a+)+$"}}"#, count: 400).joined(separator: ",")
        let query = try selector(#"{"$or":["# + clauses + "]}")
        let budget = RegexBudget(nanoseconds: 50_000_000)
        let started = RegexBudget.threadCPUNanoseconds()
        _ = query.matches(document(Self.catastrophic), budget: budget)
        #expect(budget.isSpent)
        #expect(RegexBudget.threadCPUNanoseconds() - started < 1_000_000_000)
    }

    /// An array field: `$elemMatch` runs the pattern once per element, all from one budget.
    @Test func regexOverAThousandArrayElementsSharesTheBudget() throws {
        let query = try selector(#"{"tags":{"$elemMatch":{"$regex":"^(a+)+$"}}}"#)
        let tags = JSON.array(Array(repeating: .string(Self.catastrophic), count: 1_000))
        let budget = RegexBudget(nanoseconds: 50_000_000)
        _ = query.matches(.object(JSONObject([("tags", tags)])), budget: budget)
        #expect(budget.isSpent)
        #expect(budget.spentNanoseconds < 1_000_000_000)
    }

    /// Ordinary patterns over many documents stay far inside the default budget.
    @Test func ordinaryRegexOverTenThousandDocumentsStaysWithinTheBudget() throws {
        let query = try selector(#"{"s":{"$regex":"^photo-[0-9]+\\.jpe?g$"}}"#)
        let budget = RegexBudget()
        var matched = 0
        for number in 0..<10_000 where query.matches(document("photo-\(number).jpg"), budget: budget) { matched += 1 }
        #expect(matched == 10_000)
        #expect(!budget.isSpent)
    }

    /// A 12-byte pattern compiles to ~10 KB (`(?:ab){1000}`): 500 of them in one selector would hold 5 MB. One
    /// selector's programs may take 4 MiB together (400 `bad_request`), and what was reserved is given back.
    @Test func compiledPatternMemoryIsCapped() throws {
        let memory = RegexMemory(limit: 64 << 20)
        let clauses = Array(repeating: #"{"s":{"$regex":"(?:ab){1000}"}}"#, count: 500).joined(separator: ",")
        do {
            _ = try selector(#"{"$or":["# + clauses + "]}", memory: memory)
            Issue.record("a selector whose patterns compile to 5 MB was accepted")
        } catch let error as SelectorError {
            #expect(error.status == 400)
            #expect(error.reason.contains("MiB"))
        }
        #expect(memory.inUse == 0, "a refused selector gives back what its patterns reserved")
        let fewer = Array(repeating: #"{"s":{"$regex":"(?:ab){1000}"}}"#, count: 100).joined(separator: ",")
        let accepted = try selector(#"{"$or":["# + fewer + "]}", memory: memory)
        #expect(accepted.regexBytes > 900_000)
        #expect(memory.inUse == accepted.regexBytes)
    }

    /// Across the server: selectors alive at once share one `RegexMemory`; past it a selector is 503 (to be
    /// retried), and the bytes come back when selectors go.
    @Test func compiledPatternMemoryIsCappedAcrossTheServer() throws {
        let memory = RegexMemory(limit: 2 << 20)
        let clauses = Array(repeating: #"{"s":{"$regex":"(?:ab){1000}"}}"#, count: 60).joined(separator: ",")
        let text = #"{"$or":["# + clauses + "]}"
        var alive: [Selector] = []
        var refusal: SelectorError?
        for _ in 0..<10 {
            do {
                alive.append(try selector(text, memory: memory))
            } catch let error as SelectorError {
                refusal = error
                break
            }
        }
        #expect(alive.count == 3, "three 600 KB selectors fit in 2 MiB, the fourth does not")
        #expect(refusal?.status == 503)
        #expect(refusal?.error == "service_unavailable")
        #expect(memory.inUse <= memory.limit)
        alive.removeAll()
        #expect(memory.inUse == 0)
        _ = try selector(text, memory: memory)
    }

    /// Thousands of compiled selectors one after the other (as thousands of `_find` requests): the server's
    /// reservation returns to zero each time, so nothing accumulates.
    @Test func thousandsOfRegexSelectorsLeaveNoReservationBehind() throws {
        let memory = RegexMemory(limit: 1 << 20)
        for number in 0..<5_000 {
            let query = try selector(#"{"s":{"$regex":"^x\#(number)(?:ab){10}$"}}"#, memory: memory)
            _ = query.matches(document("x\(number)ab"), budget: RegexBudget())
        }
        #expect(memory.inUse == 0)
    }

    /// 5,000 groups make every backtracking frame ~80 KB: one match took 400 MB of heap (PCRE2's default heap limit
    /// is 20 GB). Each match now gets 8 MiB of frames; past that it is a non-match.
    @Test func thousandsOfGroupsCannotTakeHundredsOfMegabytesPerMatch() throws {
        let pattern = String(repeating: "(a)", count: 5_000)
        let regex = try MangoRegex(pattern, memory: RegexMemory(limit: 64 << 20))
        #expect(!regex.matches(String(repeating: "a", count: 5_000), budget: RegexBudget()))
        // A pattern with a few groups still matches.
        #expect(try MangoRegex("^(a)(b)(c)", memory: RegexMemory(limit: 1 << 20)).matches("abc"))
    }
}
