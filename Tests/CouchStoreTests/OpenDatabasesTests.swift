import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CouchStore

/// Writes one small document to `db`.
private func put(_ db: Database, _ id: String) throws {
    _ = try db.applyEdits([RevisionWrite(docID: id, path: [], body: body("{\"id\":\"\(id)\"}"))])[0].result.get()
}

/// The bound on open databases (`--max-dbs-open`): least recently used idle databases close, reopen unnoticed
/// on their next use, and a leased one (a feed, a stream, a replication) is never closed under its user.
@Suite struct OpenDatabasesTests {
    @Test func closesTheLeastRecentlyUsedIdleDatabase() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 3)
        defer { store.close() }
        let a = try store.create("a")
        let b = try store.create("b")
        let c = try store.create("c")
        #expect(store.openDatabaseCount == 3)
        _ = try a.info()  // a is now more recent than b and c
        _ = try store.create("d")
        #expect(store.openDatabaseCount == 3)
        #expect(!b.isOpen)
        #expect(a.isOpen && c.isOpen)
        _ = try store.create("e")
        #expect(!c.isOpen)
        #expect(a.isOpen)
    }

    @Test func aClosedDatabaseReopensWithEverythingItHad() throws {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory, maxOpenDatabases: 2)
        defer { store.close() }
        let first = try store.create("first")
        try put(first, "doc")
        try first.setRevsLimit(7)
        _ = try first.putLocal("_local/checkpoint", body: body("{\"seq\":1}"))
        for index in 0..<5 { _ = try store.create("other\(index)") }
        #expect(!first.isOpen)
        #expect(try store.open("first") === first)
        #expect(try first.document("doc") != nil)
        #expect(first.updateSeq == 1)
        #expect(first.revsLimit == 7)
        #expect(try first.localDocument("_local/checkpoint") != nil)
        try put(first, "again")
        #expect(first.updateSeq == 2)
        #expect(first.isOpen)
        #expect(store.openDatabaseCount <= 2)
    }

    @Test func aLeasedDatabaseStaysOpenWhileHundredsOfOthersAreTouched() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 5)
        defer { store.close() }
        let feed = try store.create("feed")
        let lease = try feed.lease()
        defer { lease.release() }
        for index in 0..<200 {
            let db = try store.create("db\(index)")
            try put(db, "x")
            #expect(feed.isOpen)
            #expect(store.openDatabaseCount <= 5)
        }
        // The feed still works on the same engine, and a commit still wakes it.
        let woke = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            woke.store(feed.waitForChange(after: 0, timeout: .seconds(10)), ordering: .sequentiallyConsistent)
            done.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.05)
        try put(feed, "change")
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(woke.load(ordering: .sequentiallyConsistent) == 1)
    }

    @Test func theBoundIsExceededOnlyWhileEveryOpenDatabaseIsInUse() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 2)
        defer { store.close() }
        var leases: [DatabaseLease] = []
        for index in 0..<6 {
            // No request fails for the bound: with every open database leased, one more opens.
            leases.append(try store.create("held\(index)").lease())
        }
        #expect(store.openDatabaseCount == 6)
        #expect(leases.allSatisfy { $0.database.isOpen })
        for lease in leases { lease.release() }
        #expect(store.openDatabaseCount == 2)
        // Releasing twice is harmless: the count of users never goes below zero.
        leases[0].release()
        _ = try leases[0].database.info()
        #expect(store.openDatabaseCount == 2)
    }

    @Test func aWaitingFeedWithoutALeaseSurvivesItsDatabaseClosingAndReopening() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 1)
        defer { store.close() }
        let watched = try store.create("watched")
        let woke = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            woke.store(watched.waitForChange(after: 0, timeout: .seconds(10)), ordering: .sequentiallyConsistent)
            done.signal()
        }.start()
        _ = try store.create("other")
        #expect(!watched.isOpen)
        try put(watched, "doc")  // reopens it; the commit wakes the waiter registered before the close
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(woke.load(ordering: .sequentiallyConsistent) == 1)
    }

    @Test func concurrentUseOfManyDatabasesLosesNothingAndEndsWithinTheBound() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 3)
        defer { store.close() }
        let names = (0..<12).map { "c\($0)" }
        for name in names { _ = try store.create(name) }
        let failures = Atomic<Int>(0)
        let group = DispatchGroup()
        let threads = 8
        let perThread = 40
        for thread in 0..<threads {
            group.enter()
            Thread {
                defer { group.leave() }
                for step in 0..<perThread {
                    let name = names[(thread * 7 + step * 5) % names.count]
                    do {
                        let db = try store.open(name)
                        if step % 3 == 0 {
                            let lease = try db.lease()
                            _ = try db.info()
                            lease.release()
                        }
                        try put(db, "t\(thread)-s\(step)")
                        _ = try db.document("t\(thread)-s\(step)")
                    } catch {
                        failures.add(1, ordering: .relaxed)
                    }
                }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        #expect(failures.load(ordering: .relaxed) == 0)
        var total = 0
        for name in names { total += try store.open(name).info().docCount }
        #expect(total == threads * perThread)
        #expect(store.openDatabaseCount <= 3)
    }

    @Test func alwaysOpenDatabasesAreNeitherClosedNorCounted() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 1, alwaysOpen: ["_users"])
        defer { store.close() }
        let users = try store.create("_users")
        _ = try store.create("a")
        _ = try store.create("b")
        #expect(users.isOpen)
        #expect(store.boundedOpenDatabaseCount == 1)
        #expect(store.openDatabaseCount == 2)  // what `_stats` reports: every open database
    }

    @Test func aDeletedDatabaseCannotBeLeasedAndItsHeldLeaseStopsWorking() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 2)
        defer { store.close() }
        let db = try store.create("gone")
        let lease = try db.lease()
        try store.delete("gone")
        #expect(throws: StoreError.dbNotFound) { try db.info() }
        #expect(throws: StoreError.dbNotFound) { try db.lease() }
        lease.release()
        #expect(store.openDatabaseCount == 0)
        // A new database of the same name is a new handle, not the deleted one reopened.
        let again = try store.create("gone")
        #expect(again !== db)
        #expect(try again.info().docCount == 0)
    }
}

/// Writes about `kib` KiB of documents to `db`, in batches of 50 documents of 4 KB.
private func fill(_ db: Database, kib: Int) throws {
    for batch in 0..<max(1, kib / 200) {
        let edits = (0..<50).map { index in
            RevisionWrite(
                docID: "d\(batch)-\(index)", path: [],
                body: body("{\"t\":\"\(String(repeating: "y", count: 4_000))\"}"))
        }
        _ = try db.applyEdits(edits)
    }
}

/// The page cache the open databases' writers share (`WriterCacheBudget`): each writer keeps the budget's part
/// its database's size earns, and a busy writer gives back what is over it at its next commit.
@Suite struct WriterCacheBudgetTests {
    /// What the writer runs with, read inside one of its own transactions.
    private func writerCache(_ db: Database) throws -> (kib: Int, usedBytes: Int) {
        try db.write { connection in (-(try connection.scalarInt("PRAGMA cache_size") ?? 0), connection.cacheUsedBytes)
        }
    }

    @Test func partsFollowTheDatabasesSizesDownToTheFloor() {
        let budget = WriterCacheBudget(kib: 8192)
        #expect(budget.share(ofPages: 0) == 8192)  // nothing open yet: a first writer gets it all
        budget.resized(from: 0, to: 100)
        #expect(budget.share(ofPages: 100) == 8192)
        budget.resized(from: 0, to: 100)
        #expect(budget.share(ofPages: 100) == 4096)
        budget.resized(from: 0, to: 1)
        #expect(budget.share(ofPages: 1) == WriterCacheBudget.minimumKiB)
        #expect(budget.share(ofPages: 100) == 8192 * 100 / 201)
        budget.resized(from: 100, to: 300)  // one database grew
        #expect(budget.share(ofPages: 300) == 8192 * 300 / 401)
        #expect(budget.share(ofPages: 100) == 8192 * 100 / 401)
        budget.resized(from: 300, to: 0)  // and closed
        budget.resized(from: 1, to: 0)
        #expect(budget.totalPages == 100)
        #expect(budget.share(ofPages: 100) == 8192)
        #expect(WriterCacheBudget(kib: 1).kib == WriterCacheBudget.minimumKiB)
    }

    @Test func aWriterKeepsItsPartAsDatabasesGrowAndClose() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 100, writerCacheKiB: 4096)
        defer { store.close() }
        let first = try store.create("first")
        try fill(first, kib: 1_000)
        #expect(try writerCache(first).kib == 4096)
        let second = try store.create("second")
        try fill(second, kib: 1_000)
        // Alike databases: half each (what the first reported at its last commit against the total).
        let pages = try first.read { $0.pageCount }
        let total = store.writerCacheBudget.totalPages
        let half = try writerCache(first).kib
        #expect(half == 4096 * pages / total)
        #expect(half > 1700 && half < 2400)
        // Small databases beside it take little (a new file is a few pages of empty tables).
        for index in 0..<10 { try put(try store.create("small\(index)"), "x") }
        #expect(try writerCache(first).kib > half * 8 / 10)
        try store.delete("second")
        _ = try writerCache(first)  // the first commit after the delete reports, the next one applies
        #expect(try writerCache(first).kib > half * 3 / 2)
    }

    @Test func aWriterOverItsNewPartGivesPagesBackAtItsNextCommit() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 100, writerCacheKiB: 2048)
        defer { store.close() }
        let big = try store.create("big")
        try fill(big, kib: 1_600)
        let before = try writerCache(big).usedBytes
        #expect(before > 1 << 20)
        // A database three times its size opens: the big one's part falls to about a quarter of the budget.
        try fill(try store.create("bigger"), kib: 4_800)
        try put(big, "next")
        let after = try writerCache(big)
        #expect(after.kib < 700)
        // The pages over the part went (a little over it stays: the pages of the transaction in progress).
        #expect(after.usedBytes < (after.kib + 256) << 10)
    }
}

/// What the open databases' page caches hold (`Store.pageCache`, `_system`'s `page_cache_*`): each writer's cache
/// after its commits, each idle reader's when it is back in its pool, and nothing once the databases close.
@Suite struct PageCacheGaugeTests {
    @Test func theWritersFigureIsWhatEachWriterHoldsAfterItsLastCommit() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 10)
        defer { store.close() }
        #expect(store.pageCache.writers == 0)
        let a = try store.create("a")
        let b = try store.create("b")
        try fill(a, kib: 1_000)
        try fill(b, kib: 2_000)
        // Read inside a write: the writer's own figure at that moment, which the next commit reports.
        let held = try a.write { $0.cacheUsedBytes } + (try b.write { $0.cacheUsedBytes })
        #expect(held > 2 << 20)
        #expect(store.pageCache.writers == held)
        try store.delete("a")
        #expect(store.pageCache.writers == (try b.write { $0.cacheUsedBytes }))
        try store.delete("b")
        #expect(store.pageCache.writers == 0)
    }

    @Test func theReadersFigureCountsIdleReadersAndNothingOnceTheyClose() throws {
        let store = try Store(directory: temporaryDirectory(), maxOpenDatabases: 10)
        defer { store.close() }
        let db = try store.create("r")
        try fill(db, kib: 1_000)
        #expect(store.pageCache.readers == 0)
        var inside = 0
        let count = try db.read { connection in
            let rows = try connection.scalarInt("SELECT count(length(body)) FROM documents") ?? 0
            inside = store.pageCache.readers  // the reader in use is not counted while it reads
            return rows
        }
        #expect(count == 250)
        #expect(inside == 0)
        let idle = store.pageCache.readers
        #expect(idle > 256 << 10)  // a scan of ~1 MiB of documents left its pages in the reader's cache
        try store.delete("r")
        #expect(store.pageCache.readers == 0)
    }
}
