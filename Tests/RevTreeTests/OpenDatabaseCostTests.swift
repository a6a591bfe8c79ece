import CMalloc
import CSQLite
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import RevTree

/// Bytes the process's heap has handed out now, after giving back what it can.
func heapInUse() -> Int {
    _ = malloc_trim(0)
    return Int(clamping: couchlite_heap_info().uordblks)
}

/// What a database costs while it stays open: thousands of them, each written once, must fit in a small server
/// (the open-database bound keeps 500 of them open).
@Suite struct OpenDatabaseCostTests {
    /// SQLite sets aside no page cache per connection before it caches pages (by default each connection's first
    /// read reserved room for 20 pages, ~86 KB, more than the rest of what a connection costs). Heap figures are
    /// the process's, shared with tests running meanwhile, so the least of three rounds is compared, with margin.
    @Test func aConnectionReservesNoPageCacheAheadOfUse() throws {
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
