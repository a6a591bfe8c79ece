import Foundation
import RevTree
import Testing

@testable import CouchServer

/// `DatabaseUpdates`: one row per database and kind, in sequence order, bounded, and waking waiting feeds.
@Suite struct DatabaseUpdatesTests {
    @Test func aRepeatedEventMovesToTheEnd() {
        let updates = DatabaseUpdates()
        updates.record("a", .created)
        updates.record("b", .created)
        updates.record("a", .updated)
        updates.record("a", .updated)
        let events = updates.events(after: 0)
        #expect(events.map { "\($0.kind.rawValue):\($0.name)" } == ["created:a", "created:b", "updated:a"])
        #expect(events.map(\.seq) == [1, 2, 4])
        #expect(updates.events(after: 2).map(\.name) == ["a"])
        #expect(updates.events(after: 0, descending: true, limit: 2).map(\.seq) == [4, 2])
        #expect(updates.events(after: 0, limit: 0).isEmpty)
    }

    /// A flood of database names (a client creating and deleting databases forever) keeps at most the bound (plus
    /// the tenth it trims in one go), the newest.
    @Test func aFloodOfNamesStaysBounded() {
        let updates = DatabaseUpdates(maxEntries: 100)
        for index in 0..<10_000 { updates.record("db\(index)", .created) }
        let events = updates.events(after: 0)
        #expect(events.count <= 110 && events.count >= 100)
        #expect(events.last?.name == "db9999")
        #expect(updates.lastSeq == 10_000)
    }

    @Test func aWaitingFeedWakesAtTheNextEvent() {
        let updates = DatabaseUpdates()
        let clock = ContinuousClock()
        let started = clock.now
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { updates.record("x", .created) }
        #expect(updates.wait(after: 0, timeout: .seconds(10)) == 1)
        #expect(clock.now - started < .seconds(5))
        #expect(updates.wait(after: 1, timeout: .milliseconds(50)) == 1)
    }
}
