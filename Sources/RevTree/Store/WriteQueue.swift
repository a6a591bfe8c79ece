import Dispatch
import Foundation
import Synchronization

/// The single writer of one database, with group commit.
///
/// Callers enqueue jobs and block; one writer thread takes every queued job, runs them in one `BEGIN IMMEDIATE`
/// transaction (each inside its own savepoint, so a failing job rolls back alone), commits once and wakes them.
/// With `synchronous=FULL` in WAL mode the commit's WAL fsync makes every job in it durable before any caller is
/// answered, and concurrent writers share that one fsync.
final class WriteQueue: Sendable {
    /// A queued job and its completion.
    private struct Job: Sendable {
        var body: @Sendable (SQLiteConnection) throws -> Void
        var ticket: Ticket
        var checkpointAfter: Bool
    }

    /// Completion of one job. `@unchecked Sendable` is safe: the writer thread writes `error` before signalling
    /// `done`, and the caller reads it only after `done.wait()`, so the semaphore orders the accesses.
    final class Ticket: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var error: (any Error)?
    }

    /// Holds a job's return value with the same hand-over discipline as `Ticket` (written before `done` is
    /// signalled, read after `wait`), which is why `@unchecked Sendable` is safe.
    private final class ResultBox<T>: @unchecked Sendable {
        var value: T?
    }

    private struct State {
        var jobs: [Job] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Touched only by the writer thread once it has started.
    private let connection: SQLiteConnection
    private let afterCommit: @Sendable (SQLiteConnection) -> Void

    /// Starts the writer thread.
    /// - Parameter afterCommit: runs on the writer thread after each successful commit (publishes the new seq).
    init(connection: SQLiteConnection, afterCommit: @escaping @Sendable (SQLiteConnection) -> Void) {
        self.connection = connection
        self.afterCommit = afterCommit
        let thread = Thread { [self] in run() }
        thread.name = "couchlite-writer"
        thread.start()
    }

    /// Runs `body` inside the next group transaction and returns its value once that transaction is durable.
    /// - Throws: what `body` threw (its savepoint was rolled back), a commit failure, or `StoreError.dbNotFound`
    ///   when the database was closed.
    func perform<T: Sendable>(checkpointAfter: Bool = false, _ body: @escaping @Sendable (SQLiteConnection) throws -> T)
        throws -> T
    {
        let box = ResultBox<T>()
        let ticket = Ticket()
        let job = Job(body: { box.value = try body($0) }, ticket: ticket, checkpointAfter: checkpointAfter)
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.jobs.append(job)
            return true
        }
        guard accepted else { throw StoreError.dbNotFound }
        wake.signal()
        ticket.done.wait()
        if let error = ticket.error { throw error }
        guard let value = box.value else { throw StoreError.internalError("write job produced no value") }
        return value
    }

    /// Finishes queued jobs, stops the thread and waits for it.
    func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wake.signal()
        finished.wait()
    }

    private func run() {
        while true {
            wake.wait()
            let (jobs, closed) = state.withLock { state in
                defer { state.jobs.removeAll() }
                return (state.jobs, state.closed)
            }
            if !jobs.isEmpty { commit(jobs) }
            if closed {
                // Drain anything enqueued between the take and `closed` (none can be added after).
                let rest = state.withLock { state in
                    defer { state.jobs.removeAll() }
                    return state.jobs
                }
                if !rest.isEmpty { commit(rest) }
                finished.signal()
                return
            }
        }
    }

    private func commit(_ jobs: [Job]) {
        do {
            try connection.run(.beginImmediate)
        } catch {
            for job in jobs {
                job.ticket.error = error
                job.ticket.done.signal()
            }
            return
        }
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
        do {
            try connection.run(.commit)
            afterCommit(connection)
            if jobs.contains(where: \.checkpointAfter) {
                try? connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }
        } catch {
            try? connection.run(.rollback)
            for job in jobs where job.ticket.error == nil { job.ticket.error = error }
        }
        for job in jobs { job.ticket.done.signal() }
    }
}
