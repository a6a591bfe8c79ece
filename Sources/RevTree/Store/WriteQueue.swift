import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The single writer of one database, with pipelined group commit.
///
/// Callers enqueue jobs and block. The writer thread takes every queued job, runs them in one `BEGIN IMMEDIATE`
/// transaction (each inside its own savepoint, so a failing job rolls back alone) and commits once; the connection
/// runs with `synchronous=NORMAL` (its owner sets it), so that commit writes its WAL frames without waiting for the disk. The sync
/// thread then `fdatasync`s the WAL — making that commit and every one before it durable — and only then publishes
/// the new state and wakes the callers. While it waits for the disk the writer already runs the next transaction,
/// so the fsync is shared by every commit that finished in the meantime and no longer stalls the writer.
///
/// Durability is unchanged from `synchronous=FULL`: no caller is answered, and no `_changes` waiter woken, before
/// its commit's frames are on disk. SQLite keeps the file consistent at `NORMAL` (WAL checkpoints sync the WAL
/// before copying it), so a crash at any point loses at most commits nobody was told about. Readers may see a
/// commit a moment before it is durable, as they may see one whose caller has not been answered yet.
final class WriteQueue: Sendable {
    /// A queued job and its completion.
    private struct Job: Sendable {
        var body: @Sendable (SQLiteConnection) throws -> Void
        var ticket: Ticket
        var checkpointAfter: Bool
    }

    /// A commit waiting for its WAL sync: whom to wake and what to publish.
    private struct Committed: Sendable {
        var tickets: [Ticket]
        var publish: (@Sendable () -> Void)?
    }

    /// Completion of one job. `@unchecked Sendable` is safe: the writer or sync thread writes `error` before
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
    private let syncer: BatchWorker<Committed>
    private let connection: SQLiteConnection
    private let cache: WriterCache

    /// Starts the writer and sync threads.
    /// - Parameters:
    ///   - connection: the database's only writing connection, set to `synchronous=NORMAL`; from now on used by
    ///     the writer thread alone.
    ///   - cache: the page-cache budget the writer shares with the other open databases' writers.
    ///   - gauge: where the writer reports the bytes its page cache holds after each commit.
    ///   - sync: makes every commit so far durable (`WALFile.sync` of the connection's WAL); nil or an error.
    ///   - afterCommit: runs on the writer thread after each successful commit and reads what it changed; the
    ///     closure it returns runs once that commit is durable (publishes the new seq, wakes feeds).
    init(
        connection: SQLiteConnection, cache budget: WriterCacheBudget = WriterCacheBudget(),
        gauge: PageCacheGauge = PageCacheGauge(), sync: @escaping @Sendable () -> StoreError?,
        afterCommit: @escaping @Sendable (SQLiteConnection) -> (@Sendable () -> Void)?
    ) {
        let syncer = BatchWorker<Committed>(name: "couchlite-sync") { batch in
            let error = sync()
            for committed in batch {
                if error == nil { committed.publish?() }
                for ticket in committed.tickets { ticket.finish(error) }
            }
        }
        self.syncer = syncer
        self.connection = connection
        let cache = WriterCache(budget, gauge: gauge, connection: connection)
        self.cache = cache
        // Reported before the commit is handed to the syncer, so a caller answered sees its commit counted.
        let reportedThenAfterCommit: @Sendable (SQLiteConnection) -> (@Sendable () -> Void)? = { connection in
            cache.report(connection)
            return afterCommit(connection)
        }
        self.writer = BatchWorker<Job>(name: "couchlite-writer") { jobs in
            cache.apply(to: connection)
            WriteQueue.commit(jobs, connection, reportedThenAfterCommit, syncer)
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

    /// Finishes queued jobs and their syncs, stops both threads and closes the connection.
    /// - Parameter persistWAL: keep the WAL files (see ``SQLiteConnection/persistWAL()``).
    func close(persistWAL: Bool = false) {
        writer.close()
        cache.closed()
        syncer.close()
        if persistWAL { connection.persistWAL() }
        connection.close()
    }

    private static func commit(
        _ jobs: [Job], _ connection: SQLiteConnection,
        _ afterCommit: (SQLiteConnection) -> (@Sendable () -> Void)?, _ syncer: BatchWorker<Committed>
    ) {
        // A failed BEGIN or COMMIT fails every job; a job's own failure only rolls back its savepoint, so the body
        // never throws.
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
        let tickets = jobs.map(\.ticket)
        if !syncer.enqueue(Committed(tickets: tickets, publish: publish)) {
            // Unreachable while `close` stops the writer before the syncer; answer rather than hang.
            for ticket in tickets { ticket.finish(StoreError.dbNotFound) }
        }
    }
}

/// A database's WAL file, opened on first sync (SQLite creates it with the first write) and kept open for
/// `fdatasync`. Used by the sync thread only, hence `@unchecked Sendable`.
final class WALFile: @unchecked Sendable {
    private let path: String
    private var fd: Int32 = -1

    init(path: String) { self.path = path }

    deinit { if fd >= 0 { close(fd) } }

    /// Makes everything written to the WAL so far durable.
    /// - Returns: nil on success (also when no WAL exists yet: nothing was written), else the error.
    func sync() -> StoreError? {
        if fd < 0 {
            fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd < 0 { return errno == ENOENT ? nil : .internalError("open \(path): errno \(errno)") }
        }
        while fdatasync(fd) != 0 {
            if errno != EINTR { return .internalError("fdatasync \(path): errno \(errno)") }
        }
        return nil
    }
}
