import CSQLiteSyncProbe
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CouchStore
@testable import RevTree

/// A write is visible only once it is durable: while SQLite's sync of a commit is held (the test VFS in
/// CSQLiteSyncProbe), no reader — a document read, `_all_docs`, `_changes`, the published seq, a feed waiting on
/// it, the store's event observer — sees it and its caller is not answered; a sync that fails leaves nothing
/// visible. Serialized: the probe watches one directory at a time.
@Suite(.serialized) struct DurableVisibilityTests {
    /// A store in a fresh directory whose files the probe watches (from after the database was created).
    final class Probed {
        let directory = temporaryDirectory()
        let store: Store
        let database: Database
        /// What the store's event observer heard.
        final class Events: Sendable {
            let heard = Mutex<[String]>([])
        }
        let events = Events()

        init() throws {
            // Registering a VFS initializes SQLite, after which the store's process-wide settings cannot apply.
            SQLiteConnection.configureProcess()
            #expect(couchlite_sync_probe_install() == 0)
            store = try Store(directory: directory)
            database = try store.create("db")
            store.observe { [events] name, event in events.heard.withLock { $0.append("\(name):\(event.rawValue)") } }
            couchlite_sync_probe_watch(directory)
        }

        deinit {
            couchlite_sync_probe_watch(nil)
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Starts a write of `id` on a thread of its own (Dispatch's pool would run blocked writers a few at a time).
        func write(_ id: String) -> PendingWrite {
            let pending = PendingWrite()
            Thread.detachNewThread { [database] in
                let result = Result { try database.applyEdits([RevisionWrite(docID: id, path: [], body: body("{}"))]) }
                    .flatMap { results in Result { try results[0].result.get() } }
                pending.outcome.withLock { $0 = result }
                pending.answered.signal()
            }
            return pending
        }

        /// What every kind of reader sees of `id` now.
        func visible(_ id: String) throws -> [String] {
            var seen: [String] = []
            if try database.document(id) != nil { seen.append("document") }
            if try database.revision(id, rev: nil) != nil { seen.append("revision") }
            try database.changes(since: 0, limit: nil, descending: false) { row in
                if row.id == id { seen.append("changes") }
                return true
            }
            if try database.changeCount(since: 0) > 0 { seen.append("changeCount") }
            if try database.info().docCount > 0 { seen.append("docCount") }
            if database.updateSeq > 0 { seen.append("updateSeq") }
            if events.heard.withLock({ $0.contains("db:updated") }) { seen.append("observer") }
            return seen
        }
    }

    /// A write running on another thread: `answered` is signalled when its caller has its outcome.
    final class PendingWrite: Sendable {
        let answered = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<RevID, any Error>?>(nil)

        /// Whether the write was answered, and succeeded.
        var succeeded: Bool { outcome.withLock { $0.map { (try? $0.get()) != nil } } ?? false }
    }

    @Test func noReaderSeesACommitWhileItsSyncIsHeld() throws {
        let probed = try Probed()
        couchlite_sync_probe_hold(1)
        let pending = probed.write("held")
        // A feed waiting for the next seq, as a longpoll `_changes` waits.
        let feedWoke = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [database = probed.database] in
            if database.waitForChange(after: 0, timeout: .seconds(30)) > 0 { feedWoke.signal() }
        }
        #expect(couchlite_sync_probe_wait_entered(1, 10_000) == 1, "the commit never reached its sync")
        // Long enough for a commit made visible before its sync to show up in every reader.
        usleep(200_000)
        #expect(try probed.visible("held") == [])
        #expect(pending.answered.wait(timeout: .now() + .milliseconds(100)) == .timedOut)
        #expect(feedWoke.wait(timeout: .now() + .milliseconds(10)) == .timedOut)
        couchlite_sync_probe_hold(0)
        #expect(pending.answered.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(pending.succeeded)
        #expect(feedWoke.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(
            try probed.visible("held")
                == ["document", "revision", "changes", "changeCount", "docCount", "updateSeq", "observer"])
        #expect(couchlite_sync_probe_finished() >= 1)
    }

    /// Many writers while the sync is held share one group commit, and so one sync once it is let go.
    @Test func writersQueuedBehindAHeldSyncShareTheNextOne() throws {
        let probed = try Probed()
        couchlite_sync_probe_hold(1)
        let first = probed.write("first")
        #expect(couchlite_sync_probe_wait_entered(1, 10_000) == 1)
        let others = (0..<20).map { probed.write("queued-\($0)") }
        usleep(300_000)
        let syncsBefore = couchlite_sync_probe_entered()
        couchlite_sync_probe_hold(0)
        #expect(first.answered.wait(timeout: .now() + .seconds(10)) == .success)
        for other in others { #expect(other.answered.wait(timeout: .now() + .seconds(10)) == .success) }
        // The 20 queued writes went to disk in one or two more commits, not twenty.
        #expect(couchlite_sync_probe_entered() - syncsBefore <= 4)
        #expect(try probed.database.info().docCount == 21)
    }

    @Test func aFailedSyncIsItsCallersErrorAndLeavesNothingVisible() throws {
        let probed = try Probed()
        couchlite_sync_probe_fail_next(1000)
        let failed = probed.write("lost")
        #expect(failed.answered.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(failed.outcome.withLock { $0 } != nil && !failed.succeeded)
        #expect(try probed.visible("lost") == [])
        // The database goes on once the disk does.
        couchlite_sync_probe_fail_next(0)
        let next = probed.write("kept")
        #expect(next.answered.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(next.succeeded)
        #expect(try probed.database.document("kept") != nil)
        #expect(try probed.database.document("lost") == nil)
    }
}
