import Dispatch
import Synchronization

/// The single writer of one database, with group commit.
///
/// Callers enqueue jobs and block. The writer thread takes every queued job, runs them in one `BEGIN IMMEDIATE`
/// transaction (each inside its own savepoint, so a failing job rolls back alone) and commits once; the connection
/// runs with `synchronous=FULL` (its owner sets it), so that `COMMIT` returns only once the WAL holding it is
/// `fdatasync`ed: one sync for every job of the group, however many callers queued while the last one ran. Only
/// then is the new state published and are the callers woken.
///
/// Visible only once durable: SQLite makes a WAL commit visible to other connections by writing the WAL index's
/// header, which `synchronous=FULL` does after the sync. So no reader — a `GET`, `_all_docs`, a view, `_changes` —
/// sees a write that a crash or a power cut could still take away, as CouchDB publishes an update only after its
/// fsync (an earlier design synced on a thread of its own after `COMMIT`, which let readers see, and replicators
/// copy, a write 30 ms before it was durable).
final class WriteQueue: Sendable {
    /// A queued job and its completion.
    private struct Job: Sendable {
        var body: @Sendable (SQLiteConnection) throws -> Void
        var ticket: Ticket
        var checkpointAfter: Bool
    }

    /// Completion of one job. `@unchecked Sendable` is safe: the writer thread writes `error` before
    /// signalling `done`, and the caller reads it only after `done.wait()`, so the semaphore orders the accesses.
    final class Ticket: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var error: (any Error)?

        func finish(_ error: (any Error)?) {
            if self.error == nil { self.error = error }
            done.signal()
        }
    }

    /// Holds a job's return value with the same hand-over discipline as `Ticket` (written before `done` is
    /// signalled, read after `wait`), which is why `@unchecked Sendable` is safe.
    private final class ResultBox<T>: @unchecked Sendable {
        var value: T?
    }

    /// The writer's page cache: its size follows the writer's part of the budget, set before a group transaction
    /// when the part changed (lowering `cache_size` frees the pages over the new size at once). After each commit
    /// the writer reports its file's pages to the budget and what its cache holds to the gauge. Used by the writer
    /// thread alone, and by `init` and `close` before and after that thread runs, which is why `@unchecked Sendable`
    /// is safe: no two threads ever touch it at once.
    private final class WriterCache: @unchecked Sendable {
        let budget: WriterCacheBudget
        let gauge: PageCacheGauge
        var applied: Int?
        var pages = 0
        var measured = 0

        init(_ budget: WriterCacheBudget, gauge: PageCacheGauge, connection: SQLiteConnection) {
            self.budget = budget
            self.gauge = gauge
            report(connection)
        }

        func apply(to connection: SQLiteConnection) {
            let kib = budget.share(ofPages: pages)
            guard kib != applied, (try? connection.setPragma("cache_size", "-\(kib)")) != nil else { return }
            applied = kib
        }

        /// Reports the file's pages and what the cache holds now.
        func report(_ connection: SQLiteConnection) {
            let now = connection.pageCount
            budget.resized(from: pages, to: now)
            pages = now
            let bytes = connection.cacheUsedBytes
            gauge.writer(from: measured, to: bytes)
            measured = bytes
        }

        func closed() {
            budget.resized(from: pages, to: 0)
            pages = 0
            gauge.writer(from: measured, to: 0)
            measured = 0
        }
    }

    private let writer: BatchWorker<Job>
    private let connection: SQLiteConnection
    private let cache: WriterCache

    /// Starts the writer (its thread runs while there are jobs).
    /// - Parameters:
    ///   - connection: the database's only writing connection, set to `synchronous=FULL`; from now on used by the
    ///     writer thread alone.
    ///   - cache: the page-cache budget the writer shares with the other open databases' writers.
    ///   - gauge: where the writer reports the bytes its page cache holds after each commit.
    ///   - afterCommit: runs on the writer thread after each durable commit and reads what it changed; the closure
    ///     it returns publishes that (the new seq, waking feeds) before the commit's callers are answered.
    ///   - idleTimeout: how long the thread waits for more work before it gives its page cache back and ends.
    init(
        connection: SQLiteConnection, cache budget: WriterCacheBudget = WriterCacheBudget(),
        gauge: PageCacheGauge = PageCacheGauge(), idleTimeout: DispatchTimeInterval = .seconds(10),
        afterCommit: @escaping @Sendable (SQLiteConnection) -> (@Sendable () -> Void)?
    ) {
        self.connection = connection
        let cache = WriterCache(budget, gauge: gauge, connection: connection)
        self.cache = cache
        // A writer with nothing to do for a while gives its page cache back (the next write reads its pages again,
        // from the kernel's cache): otherwise every open database written once kept what it cached, up to its
        // part of the budget and never less than `WriterCacheBudget.minimumKiB`, for as long as it stayed open.
        self.writer = BatchWorker<Job>(
            name: "couchlite-writer", idleTimeout: idleTimeout,
            whenIdle: {
                connection.releaseMemory()
                cache.report(connection)
            }
        ) { jobs in
            cache.apply(to: connection)
            WriteQueue.commit(jobs, connection) { connection in
                // Reported before anyone is answered, so a caller answered sees its commit counted.
                cache.report(connection)
                return afterCommit(connection)
            }
        }
    }

    /// Runs `body` inside the next group transaction and returns its value once that transaction is durable.
    /// - Throws: what `body` threw (its savepoint was rolled back), a commit or sync failure, or
    ///   `StoreError.dbNotFound` when the database was closed.
    func perform<T: Sendable>(checkpointAfter: Bool = false, _ body: @escaping @Sendable (SQLiteConnection) throws -> T)
        throws -> T
    {
        let box = ResultBox<T>()
        let ticket = Ticket()
        let job = Job(body: { box.value = try body($0) }, ticket: ticket, checkpointAfter: checkpointAfter)
        guard writer.enqueue(job) else { throw StoreError.dbNotFound }
        ticket.done.wait()
        if let error = ticket.error { throw error }
        guard let value = box.value else { throw StoreError.internalError("write job produced no value") }
        return value
    }

    /// Whether the writer's thread runs now.
    var hasThread: Bool { writer.hasThread }

    /// Finishes queued jobs, stops the thread and closes the connection.
    /// - Parameter persistWAL: keep the WAL files (see ``SQLiteConnection/persistWAL()``).
    func close(persistWAL: Bool = false) {
        writer.close()
        cache.closed()
        if persistWAL { connection.persistWAL() }
        connection.close()
    }

    private static func commit(
        _ jobs: [Job], _ connection: SQLiteConnection, _ afterCommit: (SQLiteConnection) -> (@Sendable () -> Void)?
    ) {
        // A failed BEGIN or COMMIT (its WAL sync included) fails every job; a job's own failure only rolls back its
        // savepoint, so the body never throws.
        do {
            try connection.inTransaction(.immediate) {
                for job in jobs {
                    do {
                        try connection.run(.savepoint)
                        do {
                            try job.body(connection)
                            try connection.run(.release)
                        } catch {
                            job.ticket.error = error
                            try connection.run(.rollbackToSavepoint)
                            try connection.run(.release)
                        }
                    } catch {
                        job.ticket.error = error
                    }
                }
            }
        } catch {
            for job in jobs { job.ticket.finish(error) }
            return
        }
        let publish = afterCommit(connection)
        if jobs.contains(where: \.checkpointAfter) {
            // Best effort, its answer (busy, WAL frames, frames copied) unread: a reader still on old frames only
            // leaves the WAL to the checkpointer's later passes; the committed compaction is complete either way.
            try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        publish?()
        for job in jobs { job.ticket.finish(nil) }
    }
}
