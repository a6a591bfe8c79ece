import CSQLite
import Foundation
import Synchronization

/// Copies committed WAL frames back into the database file mostly on its own thread and connection, so the
/// group-commit writer rarely pays for a checkpoint inside `COMMIT`.
///
/// SQLite's automatic checkpoint runs in the committing connection: every `walThresholdPages` frames one commit
/// also writes those pages to the database file and fsyncs it, stalling every writer queued behind it. Here the
/// writer's WAL hook counts frames and wakes this thread, which runs a `PASSIVE` checkpoint (never blocking the
/// writer or readers). Under steady writes that alone never lets the WAL restart — new frames always arrive
/// while it runs — so after it has caught up, the writer's next commit checkpoints the few frames appended since
/// (cheap) and the following transaction starts the WAL from its beginning again, keeping it near the threshold.
/// Durability does not depend on checkpoints (a commit is durable once its WAL frames are fsynced, and a crash
/// replays the WAL), so this changes when the database file is updated, not what survives.
///
/// The pass opens its own connection and closes it when done: a pass comes once per `walThresholdPages` frames
/// written (4 MiB), where opening a connection costs well under a millisecond, while a connection kept for the
/// database's whole life cost every open database about 26 KB (a file handle, the schema, cached pages) although
/// most of them, written a little, never checkpoint in the background at all.
final class Checkpointer: Sendable {
    /// WAL size, in pages, that triggers a checkpoint (SQLite's default autocheckpoint).
    static let walThresholdPages = 1000
    /// WAL size, in pages, above which the checkpoint waits for the writer (`RESTART`) so the WAL cannot grow
    /// without bound while readers keep a passive checkpoint from finishing (64,000 pages = 250 MiB at 4 KiB).
    static let walLimitPages = 64_000

    /// What the writer's WAL hook and the checkpoint thread share.
    private final class Progress: Sendable {
        struct State {
            /// A background checkpoint is queued or running.
            var running = false
            /// The last background checkpoint copied every frame it saw; the writer may finish the job.
            var caughtUp = false
        }

        let state = Mutex(State())
    }

    private let progress: Progress
    /// The checkpoint thread; each item is the WAL size, in pages, when a checkpoint was asked for.
    private let worker: BatchWorker<Int>

    /// Starts the thread (on demand) and installs the WAL hook on `writer` (replacing SQLite's automatic
    /// checkpoint). `writer` keeps this object alive for as long as the hook can fire.
    init(path: String, writer: SQLiteConnection) {
        let progress = Progress()
        self.progress = progress
        worker = BatchWorker(name: "couchlite-checkpoint") { requests in
            Checkpointer.checkpoint(path: path, walPages: requests.max() ?? 0, progress)
        }
        writer.walHookOwner = self
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            writer.handle,
            { context, db, _, pages in
                guard let context else { return SQLITE_OK }
                Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue().committed(
                    walPages: Int(pages), writer: db)
                return SQLITE_OK
            }, context)
    }

    /// Called on the writer thread (inside its WAL hook) after each commit with the WAL's size in pages.
    private func committed(walPages: Int, writer: OpaquePointer?) {
        enum Action { case none, start, finish }
        let action = progress.state.withLock { state -> Action in
            guard walPages >= Checkpointer.walThresholdPages, !state.running else { return .none }
            if state.caughtUp {
                state.caughtUp = false
                return .finish
            }
            state.running = true
            return .start
        }
        switch action {
        case .none: break
        case .start:
            if !worker.enqueue(walPages) { progress.state.withLock { $0.running = false } }
        case .finish:
            // Only the frames appended since the background pass remain; once copied, the next write transaction
            // restarts the WAL. Failure (a reader still needs old frames) just leaves that to a later pass.
            var log: Int32 = 0
            var done: Int32 = 0
            _ = sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done)
        }
    }

    /// Whether a background checkpoint is queued or running (tests pace their writes by it, so what they
    /// measure is the mechanism rather than how soon a busy machine schedules the thread).
    var isRunning: Bool { progress.state.withLock { $0.running } }

    /// Stops the thread after any queued or running checkpoint (whose connection it closes).
    func close() {
        worker.close()
    }

    /// One background pass, on the checkpoint thread, on a connection of its own.
    private static func checkpoint(path: String, walPages: Int, _ progress: Progress) {
        let mode = walPages >= Checkpointer.walLimitPages ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE
        var log: Int32 = 0
        var done: Int32 = 0
        var rc = SQLITE_ERROR
        do {
            let connection = try SQLiteConnection(path: path, readOnly: false, create: false)
            defer {
                // The writer outlives every pass (`DatabaseEngine.close` stops this thread first), so this is not
                // the file's last connection, whose close would checkpoint and delete the WAL; kept all the same.
                connection.persistWAL()
                connection.close()
            }
            // A connection that has not yet read the file is not in WAL mode, and checkpointing it silently does
            // nothing (log and checkpointed counts of -1).
            try connection.setPragma("journal_mode", "WAL")
            // Errors (SQLITE_BUSY while another checkpoint runs) just mean "try again at the next threshold".
            rc = sqlite3_wal_checkpoint_v2(connection.handle, nil, mode, &log, &done)
        } catch {
            // Not opened (no descriptor, no memory): like a busy checkpoint, left to the next threshold.
        }
        progress.state.withLock { state in
            state.running = false
            state.caughtUp = rc == SQLITE_OK && log >= 0 && done == log
        }
    }
}
