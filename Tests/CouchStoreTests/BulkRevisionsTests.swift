import RevTreeTestSupport
import Testing

@testable import CouchStore

/// `Database.revisions(_:bodyBudget:)`: what `_bulk_get` reads, a run of documents in one read transaction.
@Suite struct BulkRevisionsTests {
    let db: Database

    init() throws {
        let store = try Store(directory: temporaryDirectory())
        db = try store.create("db")
        // "c" has two branches from 1-a: 2-b (deleted) and 3-d, so the leaves descending from 1-a are both.
        _ = try db.applyReplicated([
            replicated("a", "1-a"), replicated("b", "1-b", "2-b"),
            replicated("c", "1-a", "2-b", deleted: true), replicated("c", "1-a", "2-c", "3-d"),
        ])
    }

    private func query(_ id: String, _ rev: String? = nil, latest: Bool = false) -> RevisionQuery {
        RevisionQuery(id: id, rev: rev.map(r), latest: latest)
    }

    @Test func answersEveryQueryInOrderWithWinnersRevisionsAndMissingDocuments() throws {
        let queries = [query("b"), query("missing", "1-x"), query("a", "1-a"), query("b", "1-b"), query("a", "9-z")]
        let answers = try db.revisions(queries[...], bodyBudget: 1 << 20)
        #expect(answers.count == queries.count)
        #expect(answers.map { $0.info?.id } == ["b", nil, "a", "b", "a"])
        #expect(answers[0].revisions.map(\.rev) == [r("2-b")])
        #expect(answers[0].revisions[0].revision?.body == body("{\"v\":\"2-b\"}"))
        #expect(answers[1].revisions.isEmpty)
        #expect(answers[2].revisions[0].revision?.body == body("{\"v\":\"1-a\"}"))
        // an ancestor's body is not kept by a replicated write; an unknown rev is not stored at all
        #expect(answers[3].revisions[0].revision?.body == nil)
        #expect(answers[4].revisions.map(\.rev) == [r("9-z")])
        #expect(answers[4].revisions[0].revision == nil)
    }

    @Test func latestAsksForTheLeavesDescendingFromTheRevision() throws {
        let answers = try db.revisions(
            [query("c", "1-a", latest: true), query("c", "1-a"), query("c", "3-d", latest: true)][...],
            bodyBudget: 1 << 20)
        #expect(Set(answers[0].revisions.map(\.rev)) == [r("2-b"), r("3-d")])
        #expect(answers[0].revisions.first { $0.rev == r("2-b") }?.revision?.deleted == true)
        #expect(answers[1].revisions.map(\.rev) == [r("1-a")])
        #expect(answers[2].revisions.map(\.rev) == [r("3-d")])  // a leaf is its own latest
    }

    @Test func aRunStopsOnceItsBodiesPassTheBudgetAndAlwaysAnswersOne() throws {
        let queries = [query("a"), query("b"), query("c"), query("missing")]
        // No budget at all: one document a run, never none (the caller would never get to the end).
        #expect(try db.revisions(queries[...], bodyBudget: 0).map { $0.info?.id } == ["a"])
        #expect(try db.revisions(queries[2...], bodyBudget: 0).map { $0.info?.id } == ["c"])
        // Each winner's body is `{"v":"…"}`, the same length: a run takes documents while it has read no more than
        // the budget, so it ends with the one that passed it.
        let size = body("{\"v\":\"1-a\"}").count
        #expect(try db.revisions(queries[...], bodyBudget: size).map { $0.info?.id } == ["a", "b"])
        #expect(try db.revisions(queries[...], bodyBudget: 2 * size - 1).map { $0.info?.id } == ["a", "b"])
        #expect(try db.revisions(queries[...], bodyBudget: 2 * size).map { $0.info?.id } == ["a", "b", "c"])
        #expect(try db.revisions(queries[...], bodyBudget: 3 * size).count == 4)
        #expect(try db.revisions(queries[4...], bodyBudget: 1 << 20).isEmpty)
    }

    @Test func readingThemAllARunAtATimeGivesWhatOneRunGives() throws {
        let queries = (0..<50).map { query(["a", "b", "c", "missing"][$0 % 4]) }
        let whole = try db.revisions(queries[...], bodyBudget: 1 << 20)
        var runs: [RevisionAnswer] = []
        while runs.count < queries.count {
            let run = try db.revisions(queries[runs.count...], bodyBudget: 2 * body("{\"v\":\"1-a\"}").count)
            #expect(!run.isEmpty)
            runs += run
        }
        #expect(runs.map { $0.info?.id } == whole.map { $0.info?.id })
        #expect(runs.map { $0.revisions.map(\.rev) } == whole.map { $0.revisions.map(\.rev) })
    }
}
