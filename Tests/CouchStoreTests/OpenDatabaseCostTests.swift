import CMalloc
import CSQLite
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CouchStore

/// Descriptors this process holds on `path` itself (not its `-wal` or `-shm`): one per SQLite connection to it,
/// and one per connection closed while another held a lock on the file (SQLite keeps those to reuse, since closing
/// them would drop the other's POSIX locks).
func descriptors(on path: String) -> Int {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.filter {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path
    }
    .count
}

/// Bytes the process's heap has handed out now, after giving back what it can.
func heapInUse() -> Int {
    _ = malloc_trim(0)
    return Int(clamping: couchlite_heap_info().uordblks)
}

/// What a database costs while it stays open: thousands of them, each written once, must fit in a small server
/// (the open-database bound keeps 500 of them open).
@Suite struct OpenDatabaseCostTests {
    /// An open database holds its writer's connection and its idle readers, and nothing for checkpoints: the
    /// checkpointer's pass opens a connection of its own and closes it when done.
    @Test func anOpenDatabaseHoldsNoCheckpointConnection() throws {
        let store = try Store(directory: temporaryDirectory())
        defer { store.close() }
        let db = try store.create("db")
        _ = try db.applyEdits([RevisionWrite(docID: "doc", path: [], body: body("{}"))])
        _ = try db.document("doc")
        #expect(descriptors(on: db.path) == 2)  // the writer and one idle reader
        // Enough writes for background checkpoint passes (a WAL of `walThresholdPages` pages each time).
        let text = String(repeating: "x", count: 3_000)
        for batch in 0..<12 {
            let edits = (0..<100).map {
                RevisionWrite(docID: "b\(batch)-\($0)", path: [], body: body("{\"t\":\"\(text)\"}"))
            }
            _ = try db.applyEdits(edits)
            while try db.withEngine({ $0.checkpointer.isRunning }) { Thread.sleep(forTimeInterval: 0.001) }
        }
        let wal = try FileManager.default.attributesOfItem(atPath: db.path + "-wal")[.size] as? Int ?? 0
        #expect(wal < 3 * Checkpointer.walThresholdPages * 4096)  // the passes ran and did their work
        // The passes' connections are closed; at most the descriptor SQLite kept for reuse remains.
        #expect(descriptors(on: db.path) <= 3)
        #expect(try db.info().docCount == 1_201)
    }

    /// A writer idle for its timeout gives back its page cache before its thread ends, and the gauge hears of it;
    /// its next write works as before.
    @Test func anIdleWriterGivesItsPageCacheBack() throws {
        let path = temporaryDirectory() + "/idle.sqlite"
        let connection = try SQLiteConnection(path: path, readOnly: false, create: true)
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("CREATE TABLE t (n INTEGER, v TEXT)")
        let gauge = PageCacheGauge()
        let queue = WriteQueue(connection: connection, gauge: gauge, idleTimeout: .milliseconds(50)) { _ in nil }
        defer { queue.close() }
        try queue.perform { connection in
            for n in 0..<2_000 { try connection.run("INSERT INTO t VALUES (?, ?)", [.int(n), .text("value \(n)")]) }
        }
        let held = gauge.writers
        #expect(held > 40 << 10)
        try waitUntil(10) { !queue.hasThread }
        // No thread uses the connection now: its own figure can be read here.
        #expect(connection.cacheUsedBytes < held / 4)
        #expect(gauge.writers == connection.cacheUsedBytes)
        let count = try queue.perform { try $0.scalarInt("SELECT count(*) FROM t") }
        #expect(count == 2_000)
    }

    /// SQLite sets aside no page cache per connection before it caches pages (by default each connection's first
    /// read reserved room for 20 pages, ~86 KB, more than the rest of what a connection costs). Heap figures are
    /// the process's, shared with tests running meanwhile, so the least of three rounds is compared, with margin.
    @Test func aConnectionReservesNoPageCacheAheadOfUse() throws {
        #expect(SQLiteConnection.configureProcess())
        let directory = temporaryDirectory()
        let seed = try SQLiteConnection(path: directory + "/cost.sqlite", readOnly: false, create: true)
        try seed.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)")
        let connections = 100
        var perConnection = Int.max
        for _ in 0..<3 {
            let before = heapInUse()
            var open: [SQLiteConnection] = []
            for _ in 0..<connections {
                let connection = try SQLiteConnection(path: directory + "/cost.sqlite", readOnly: false, create: false)
                _ = try connection.scalarInt("SELECT n FROM t")
                open.append(connection)
            }
            perConnection = min(perConnection, (heapInUse() - before) / connections)
            for connection in open { connection.close() }
        }
        // About 25 KB now (with the reservation: about 110 KB).
        #expect(perConnection < 60 << 10)
        seed.close()
    }
}

/// A database this store created needs no read to know it has no design documents (the server's
/// validation-function cache asks on every write), until one is written; one opened from its file may hold some.
@Suite struct DesignDocumentPresenceTests {
    @Test func aCreatedDatabaseMayHoldDesignDocumentsOnlyOnceOneIsWritten() throws {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory)
        let db = try store.create("db")
        #expect(!db.mayHoldDesignDocuments)
        _ = try db.applyEdits([RevisionWrite(docID: "plain", path: [], body: body("{}"))])
        #expect(!db.mayHoldDesignDocuments)
        let design = RevisionWrite(docID: "_design/d", path: [], body: body("{\"validate_doc_update\":\"x\"}"))
        _ = try db.applyEdits([design])
        #expect(db.mayHoldDesignDocuments)
        _ = try store.create("other")
        store.close()
        let again = try Store(directory: directory)
        defer { again.close() }
        #expect(try again.open("other").mayHoldDesignDocuments)  // an existing file: unknown without a read
    }

    @Test func aDesignDocumentReplicatedInCountsToo() throws {
        let store = try Store(directory: temporaryDirectory())
        defer { store.close() }
        let db = try store.create("db")
        _ = try db.applyReplicated([replicated("_design/d", "1-abc")])
        #expect(db.mayHoldDesignDocuments)
    }
}

/// Polls `condition` every millisecond for up to `seconds`.
func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while try !condition() {
        guard Date() < deadline else { throw StoreError.internalError("condition not met within \(seconds) s") }
        usleep(1000)
    }
}
