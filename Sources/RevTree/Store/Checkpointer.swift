import CSQLite
import Foundation
import Synchronization

/// Copies committed WAL frames back into the database file on its own thread and connection, so the group-commit
/// writer never pays for a checkpoint inside `COMMIT`.
///
/// SQLite's automatic checkpoint runs in the committing connection: every `walThresholdPages` frames one commit
/// also writes those pages to the database file and fsyncs it, stalling every writer queued behind it. Here the
/// writer's WAL hook only counts frames; this thread runs `PASSIVE` checkpoints, which never block the writer or
/// readers. Durability does not depend on checkpoints (a commit is durable once its WAL frames are fsynced, and a
/// crash replays the WAL), so moving them changes when the database file is updated, not what survives.
final class Checkpointer: Sendable {
    /// WAL size, in pages, that triggers a checkpoint (SQLite's default autocheckpoint).
    static let walThresholdPages = 1000
    /// WAL size, in pages, above which the checkpoint waits for the writer (`RESTART`) so the WAL cannot grow
    /// without bound while readers keep a passive checkpoint from finishing (64,000 pages = 250 MiB at 4 KiB).
    static let walLimitPages = 64_000

    private struct State {
        var walPages = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Touched only by the checkpoint thread once it has started.
    private let connection: SQLiteConnection

    /// Opens a second connection to `path`, starts the thread and installs the WAL hook on `writer` (replacing
    /// SQLite's automatic checkpoint). `writer` keeps this object alive for as long as the hook can fire.
    init(path: String, writer: SQLiteConnection) throws {
        connection = try SQLiteConnection(path: path, readOnly: false, create: false)
        let thread = Thread { [self] in run() }
        thread.name = "couchlite-checkpoint"
        thread.start()
        writer.walHookOwner = self
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(writer.handle, { context, _, _, pages in
            guard let context else { return SQLITE_OK }
            Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue().committed(walPages: Int(pages))
            return SQLITE_OK
        }, context)
    }

    /// Called on the writer thread after each commit with the WAL's current size in pages.
    private func committed(walPages: Int) {
        let due = state.withLock { state -> Bool in
            let was = state.walPages
            state.walPages = walPages
            return walPages >= Checkpointer.walThresholdPages && was < Checkpointer.walThresholdPages
                || walPages >= Checkpointer.walLimitPages
        }
        if due { wake.signal() }
    }

    /// Stops the thread after any running checkpoint.
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
            let (pages, closed) = state.withLock { ($0.walPages, $0.closed) }
            if closed {
                finished.signal()
                return
            }
            let mode = pages >= Checkpointer.walLimitPages ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE
            var log: Int32 = 0
            var done: Int32 = 0
            // Errors (SQLITE_BUSY while another checkpoint runs) just mean "try again at the next threshold".
            _ = sqlite3_wal_checkpoint_v2(connection.handle, nil, mode, &log, &done)
            // The WAL restarts from its beginning at the next commit; until then it counts as still full, so
            // allow the next commit's report to trigger again.
            state.withLock { $0.walPages = 0 }
        }
    }
}
