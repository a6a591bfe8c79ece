import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CouchStore

/// Group commit: a failing job rolls back alone; the batch worker under it groups, drains and comes and goes.
/// (That nobody hears of a commit before its sync is `DurableVisibilityTests`, with the sync held in SQLite's VFS.)
@Suite struct WriteQueueTests {
    func connection() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(
            path: temporaryDirectory() + "/queue.sqlite", readOnly: false, create: true)
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = FULL")
        try connection.execute("CREATE TABLE t (n INTEGER)")
        return connection
    }

    @Test func aFailingJobRollsBackAlone() throws {
        let database = try connection()
        let queue = WriteQueue(connection: database) { _ in nil }
        #expect(throws: StoreError.conflict) {
            try queue.perform { connection -> Int in
                try connection.run("INSERT INTO t VALUES (9)")
                throw StoreError.conflict
            }
        }
        _ = try queue.perform { try $0.run("INSERT INTO t VALUES (1)") }
        let rows = try queue.perform { try $0.scalarInt("SELECT group_concat(n) FROM t") }
        #expect(rows == 1)
        queue.close()
        #expect(throws: StoreError.dbNotFound) { try queue.perform { _ in 0 } }
    }

    @Test func batchWorkerGroupsWhatArrivesWhileItWorksAndDrainsOnClose() {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let batches = Mutex<[[Int]]>([])
        let worker = BatchWorker<Int>(name: "test-batches") { items in
            if items == [0] {
                entered.signal()
                release.wait()
            }
            batches.withLock { $0.append(items) }
        }
        #expect(worker.enqueue(0))
        entered.wait()
        // Everything that arrives while the first batch is being handled forms the next batch, in order.
        for item in 1...50 { #expect(worker.enqueue(item)) }
        release.signal()
        worker.close()
        #expect(!worker.enqueue(99))
        #expect(batches.withLock { $0 } == [[0], Array(1...50)])
    }

    @Test func idleBatchWorkerHoldsNoThreadAndStartsOneForNewWork() throws {
        let handled = Mutex<[Int]>([])
        let worker = BatchWorker<Int>(name: "test-idle", idleTimeout: .milliseconds(20)) { items in
            handled.withLock { $0 += items }
        }
        #expect(!worker.hasThread)
        for round in 0..<3 {
            #expect(worker.enqueue(round))
            try waitUntil { handled.withLock { $0.count } == round + 1 }
            try waitUntil { !worker.hasThread }
        }
        #expect(handled.withLock { $0 } == [0, 1, 2])
        worker.close()
        #expect(!worker.enqueue(3))
    }

    /// Items queued from many threads while the worker's thread keeps ending and starting (an idle timeout of
    /// 1 ms): each is handled exactly once, in each producer's order, and close drains the rest.
    @Test func batchWorkerLosesNothingToItsThreadEndingWhileItemsArrive() {
        let handled = Mutex<[Int]>([])
        let worker = BatchWorker<Int>(name: "test-race", idleTimeout: .milliseconds(1)) { items in
            handled.withLock { $0 += items }
        }
        DispatchQueue.concurrentPerform(iterations: 4) { producer in
            for n in 0..<2000 {
                #expect(worker.enqueue(producer * 10_000 + n))
                if n % 97 == 0 { usleep(2000) }
            }
        }
        worker.close()
        let all = handled.withLock { $0 }
        #expect(all.count == 8000)
        #expect(Set(all).count == 8000)
        for producer in 0..<4 {
            let mine = all.filter { $0 / 10_000 == producer }
            #expect(mine == mine.sorted())
        }
    }

    /// `whenIdle` (an idle writer giving back its page cache) runs on the worker's thread before it ends, never
    /// while a batch is handled, even with items arriving as the thread times out; nothing is lost to it.
    @Test func whenIdleRunsBeforeTheThreadEndsAndNeverBesideABatch() {
        let busy = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let idles = Atomic<Int>(0)
        let handled = Mutex<[Int]>([])
        let exclusive: @Sendable (() -> Void) -> Void = { body in
            if busy.add(1, ordering: .sequentiallyConsistent).newValue != 1 { overlaps.add(1, ordering: .relaxed) }
            body()
            busy.subtract(1, ordering: .sequentiallyConsistent)
        }
        let worker = BatchWorker<Int>(
            name: "test-when-idle", idleTimeout: .milliseconds(1),
            whenIdle: {
                exclusive {
                    idles.add(1, ordering: .relaxed)
                    // Longer than the pause below less the timeout: the next item arrives while this runs.
                    usleep(3000)
                }
            }
        ) { items in
            exclusive { handled.withLock { $0 += items } }
        }
        DispatchQueue.concurrentPerform(iterations: 4) { producer in
            for n in 0..<1000 {
                #expect(worker.enqueue(producer * 10_000 + n))
                if n % 53 == 0 { usleep(2000) }
            }
        }
        worker.close()
        #expect(overlaps.load(ordering: .relaxed) == 0)
        #expect(idles.load(ordering: .relaxed) > 0)
        #expect(Set(handled.withLock { $0 }).count == 4000)
    }

    /// Polls `condition` for up to 10 s (a thread's start and end are the scheduler's to time).
    private func waitUntil(_ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(10)
        while !condition() {
            guard Date() < deadline else { throw StoreError.internalError("condition not met within 10 s") }
            usleep(1000)
        }
    }

    @Test func closingAWorkerThatNeverHadWorkReturnsAtOnce() {
        let worker = BatchWorker<Int>(name: "test-unused") { _ in }
        worker.close()
        worker.close()
        #expect(!worker.enqueue(1))
        #expect(!worker.hasThread)
    }
}
