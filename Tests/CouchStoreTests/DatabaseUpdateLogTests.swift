import Dispatch
import Foundation
import Testing

@testable import CouchStore

/// `DatabaseUpdateLog`: `_db_updates`' rows on disk, one per database and kind, surviving a restart.
@Suite struct DatabaseUpdateLogTests {
    let directory = temporaryDirectory()
    var path: String { directory + "/db_updates.sqlite" }

    /// A log whose timer never flushes during a test: the tests flush when they mean to.
    func open(maxEntries: Int = 100_000, seed: [String] = []) throws -> DatabaseUpdateLog {
        try DatabaseUpdateLog(path: path, maxEntries: maxEntries, window: .seconds(3600), seed: { seed })
    }

    func keys(_ events: [DatabaseUpdateLog.Event]) -> [String] { events.map { "\($0.kind.rawValue):\($0.name)" } }

    @Test func aRepeatedEventMovesToTheEnd() throws {
        let log = try open()
        log.record("a", .created)
        try log.flush()
        log.record("b", .created)
        try log.flush()
        log.record("a", .updated)
        try log.flush()
        log.record("a", .updated)
        try log.flush()
        let events = try log.events(after: 0)
        #expect(keys(events) == ["created:a", "created:b", "updated:a"])
        #expect(events.map(\.seq) == [1, 2, 4])
        #expect(try log.events(after: 2).map(\.name) == ["a"])
        #expect(try log.events(after: 0, descending: true, limit: 2).map(\.seq) == [4, 2])
        #expect(try log.events(after: 0, limit: 0).isEmpty)
        #expect(try log.events(after: 0, limit: -5).isEmpty)
    }

    /// Every write of a database in one window is one row and one sequence: the write path pays a set insert.
    @Test func writesInOneWindowCoalesceIntoOneRow() throws {
        let log = try open()
        log.record("a", .created)
        for _ in 0..<10_000 { log.record("a", .updated) }
        log.record("b", .created)
        log.record("a", .deleted)
        #expect(log.lastSeq == 0)
        #expect(try log.events(after: 0).isEmpty)
        try log.flush()
        let events = try log.events(after: 0)
        #expect(keys(events) == ["created:a", "updated:a", "created:b", "deleted:a"])
        #expect(events.map(\.seq) == [1, 2, 3, 4])
        #expect(log.lastSeq == 4)
        try log.flush()
        #expect(log.lastSeq == 4)
    }

    @Test func theTimerFlushesAndWakesAWaitingFeed() throws {
        let log = try DatabaseUpdateLog(path: path, window: .milliseconds(20))
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { log.record("x", .created) }
        let started = ContinuousClock.now
        #expect(log.wait(after: 0, timeout: .seconds(30)) == 1)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(keys(try log.events(after: 0)) == ["created:x"])
        #expect(log.wait(after: 1, timeout: .milliseconds(30)) == 1)
    }

    @Test func eventsSequencesAndEpochSurviveAReopen() throws {
        let first = try open(seed: ["old"])
        first.record("a", .created)
        first.record("a", .updated)
        first.close()
        let second = try open(seed: ["never-seeded-again"])
        #expect(second.epoch == first.epoch)
        #expect(second.lastSeq == 3)
        #expect(keys(try second.events(after: 0)) == ["created:old", "created:a", "updated:a"])
        second.record("b", .created)
        try second.flush()
        #expect(try second.events(after: 3).map(\.seq) == [4])
        second.close()
        // Closing flushes what is pending.
        let third = try open()
        third.record("c", .created)
        third.close()
        let fourth = try open()
        #expect(keys(try fourth.events(after: 4)) == ["created:c"])
        #expect(fourth.lastSeq == 5)
    }

    /// A process killed without `close`: what was flushed is there, the sequence goes on from it.
    @Test func flushedEventsSurviveWithoutAClose() throws {
        do {
            let log = try open()
            log.record("a", .created)
            try log.flush()
            log.record("lost", .created)
        }
        let log = try open()
        #expect(keys(try log.events(after: 0)) == ["created:a"])
        log.record("b", .created)
        try log.flush()
        #expect(try log.events(after: 1).map(\.seq) == [2])
    }

    @Test func aNewLogHasItsOwnEpoch() throws {
        let one = try open()
        let other = try DatabaseUpdateLog(path: nil)
        #expect(one.epoch != other.epoch)
        #expect(one.epoch != 0 && other.epoch != 0)
    }

    @Test func theFileIsOwnerOnlyWhateverTheUmask() throws {
        let old = umask(0)
        defer { umask(old) }
        let log = try open()
        log.record("a", .created)
        try log.flush()
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            let mode = try FileManager.default.attributesOfItem(atPath: path + suffix)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(suffix)")
        }
    }

    /// A damaged log is refused, and left as it was (nothing stored is lost by opening it).
    @Test func aDamagedFileIsRefusedAndLeftUntouched() throws {
        let garbage = Array(repeating: UInt8(0x5A), count: 8192)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(garbage)))
        #expect(throws: (any Error).self) { try open() }
        #expect(FileManager.default.contents(atPath: path) == Data(garbage))
    }

    /// A flood of database names (a client creating and deleting databases forever) keeps at most the bound plus
    /// the tenth trimmed in one go, the newest, and the sequence counts every event.
    @Test func aFloodOfNamesStaysBounded() throws {
        let log = try open(maxEntries: 100)
        for index in 0..<10_000 {
            log.record("db\(index)", .created)
            if index % 37 == 0 { try log.flush() }
        }
        try log.flush()
        let events = try log.events(after: 0)
        #expect(events.count <= 110 && events.count >= 100)
        #expect(events.last?.name == "db9999")
        #expect(log.lastSeq == 10_000)
        log.close()
        let reopened = try open(maxEntries: 100)
        #expect(reopened.lastSeq == 10_000)
        #expect(try reopened.events(after: 0).count == events.count)
    }

    /// More rows than a page: every one comes, in order, and `limit` holds across pages, both ways.
    @Test func readsPageByPage() throws {
        let log = try open()
        let count = DatabaseUpdateLog.pageSize * 3 + 7
        for index in 0..<count { log.record("db\(index)", .created) }
        try log.flush()
        let all = try log.events(after: 0)
        #expect(all.map(\.seq) == Array(1...count))
        let limited = try log.events(after: 5, limit: DatabaseUpdateLog.pageSize + 1)
        #expect(limited.map(\.seq) == Array(6...(6 + DatabaseUpdateLog.pageSize)))
        let newest = try log.events(after: 0, descending: true)
        #expect(newest.map(\.seq) == Array((1...count).reversed()))
        let newestAfter = try log.events(after: count - 300, descending: true, limit: 1000)
        #expect(newestAfter.map(\.seq) == Array(((count - 299)...count).reversed()))
    }

    /// A feed writing to a client that went away stops at the first failed write.
    @Test func aThrowingReaderStopsTheScan() throws {
        struct Gone: Error {}
        let log = try open()
        for index in 0..<1000 { log.record("db\(index)", .created) }
        try log.flush()
        var seen = 0
        #expect(throws: Gone.self) {
            try log.forEach(after: 0) { _ in
                seen += 1
                if seen == 3 { throw Gone() }
            }
        }
        #expect(seen == 3)
    }

    /// Hostile `since` values at this level: negative and huge ones read as bounds, never trap.
    @Test func hostileBoundsReadAsBounds() throws {
        let log = try open()
        log.record("a", .created)
        try log.flush()
        #expect(try log.events(after: -1).count == 1)
        #expect(try log.events(after: Int.min).count == 1)
        #expect(try log.events(after: Int.max).isEmpty)
        #expect(try log.events(after: Int.max, descending: true).isEmpty)
        #expect(try log.events(after: 0, limit: Int.max).count == 1)
    }

    /// Names are stored as data: quotes, SQL, colons, NULs and non-ASCII come back as they went in.
    @Test func hostileNamesAreStoredVerbatim() throws {
        let names = [
            "a'; DROP TABLE events; --", "x:y:z", "caf\u{E9}/\u{1F600}", "nul\u{0}byte",
            String(repeating: "n", count: 4000),
        ]
        let log = try open()
        for name in names { log.record(name, .created) }
        try log.flush()
        #expect(try log.events(after: 0).map(\.name) == names)
        log.close()
        #expect(try open().events(after: 0).map(\.name) == names)
    }

    @Test func afterCloseEventsAreDroppedAndWaitersWake() throws {
        let log = try open()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { log.close() }
        let started = ContinuousClock.now
        #expect(log.wait(after: 0, timeout: .seconds(30)) == 0)
        #expect(ContinuousClock.now - started < .seconds(10))
        log.record("late", .created)
        try log.flush()
        #expect(try log.events(after: 0).isEmpty)
    }

    /// Two processes on one data dir (a server and `couchlite push`'s local app): each goes on from the other's
    /// latest sequence instead of colliding with it.
    @Test func twoLogsOnOneFileShareTheSequence() throws {
        let server = try open()
        let push = try open()
        server.record("a", .created)
        try server.flush()
        push.record("b", .created)
        try push.flush()
        server.record("c", .created)
        try server.flush()
        #expect(try server.events(after: 0).map(\.seq) == [1, 2, 3])
        #expect(try push.events(after: 1).map(\.name) == ["b", "c"])
        #expect(server.lastSeq == 3)
    }

    /// Writers on many threads and a flusher racing them: every event lands once, sequences stay unique.
    @Test func concurrentRecordsAndFlushes() throws {
        let log = try DatabaseUpdateLog(path: path, window: .milliseconds(1))
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for index in 0..<200 {
                log.record("w\(worker)-\(index % 50)", index < 50 ? .created : .updated)
                if index % 20 == 0 { try? log.flush() }
            }
        }
        try log.flush()
        let events = try log.events(after: 0)
        #expect(Set(keys(events)).count == events.count)
        #expect(events.count == 8 * 50 * 2)
        #expect(Set(events.map(\.seq)).count == events.count)
        #expect(events.map(\.seq) == events.map(\.seq).sorted())
    }
}
