import Dispatch
import Foundation
import Synchronization

/// What `GET /_db_updates` reads, kept in one SQLite file so that it survives a restart: the latest event of each
/// kind (`created`, `updated`, `deleted`) of each database, with a sequence that only grows. CouchDB's global
/// changes keep one document per `kind:name` and move it to the end of their changes feed when the event happens
/// again; this keeps one row per `(kind, name)` and gives it the next sequence.
///
/// Cheap for the write path, as CouchDB's `global_changes_server` is: ``record(_:_:)`` only adds the `kind:name`
/// to a set in memory (every write of a database in a window is one entry), and a background flush at most
/// `window` later gives the set its sequences and writes it in one transaction. A sequence is handed out only
/// once its row is durable, so a client never holds one that a restart could give again; a crash loses at most
/// the last window's events, as CouchDB's loses its pending set.
///
/// Bounded: at most `maxEntries` rows (plus the tenth trimmed in one go, oldest first: a client asking from an
/// older sequence sees the latest events of every database, as a client of CouchDB's feed does), read a page at a
/// time (``forEach(after:descending:limit:_:)``), whatever the number of databases.
public final class DatabaseUpdateLog: Sendable {
    /// One row: the latest event of its kind for its database.
    public struct Event: Sendable, Equatable {
        public var name: String
        public var kind: DatabaseEvent
        public var seq: Int
    }

    /// Events waiting for the next flush, in the order they last happened.
    private struct Pending {
        var order: [Key: Int] = [:]
        var next = 0
        var flushScheduled = false
        var closed = false
    }

    private struct Key: Hashable {
        var kind: DatabaseEvent
        var name: String
    }

    /// The file and what is known of it; its lock orders flushes and page reads.
    private struct Disk {
        let connection: SQLiteConnection
        var lastSeq: Int
        /// At least the number of rows (counted exactly at open and after each trim).
        var rowsAtMost: Int
        var closed = false
    }

    private let pending = Mutex(Pending())
    private let disk: Mutex<Disk>
    /// The sequence of the latest durable event; feeds wait on it.
    private let sequence: SequenceWaiters
    /// Random, chosen when the file was created: a sequence from another log (another server, or this data dir
    /// before its log was lost) names another epoch.
    public let epoch: UInt64
    /// Most rows kept.
    public let maxEntries: Int
    /// How long an event may wait in memory before its flush.
    public let window: Duration
    /// Rows read under the lock at once: what a feed holds in memory, whatever the number of databases.
    static let pageSize = 256

    private static let schema = """
        CREATE TABLE IF NOT EXISTS events (
          kind TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL UNIQUE, PRIMARY KEY (kind, name)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS meta (
          id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL, last_seq INTEGER NOT NULL
        );
        """

    /// Opens the log at `path` (created owner-only if missing; nil: in memory, gone at close).
    /// - Parameter seed: the databases that exist, asked only when the log is created: each is recorded `created`,
    ///   so a data dir from before the log has a feed that names its databases.
    /// - Throws: `SQLiteError` when the file cannot be opened or is not such a log.
    public init(
        path: String?, maxEntries: Int = 100_000, window: Duration = .milliseconds(100),
        seed: () -> [String] = { [] }
    ) throws {
        self.maxEntries = max(1, maxEntries)
        self.window = window
        if let path { createOwnerOnly(path) }
        let connection = try SQLiteConnection(path: path ?? ":memory:", readOnly: false, create: true)
        if path != nil { try connection.setPragma("journal_mode", "WAL") }
        // A flush commits at most once a window; a sequence must be on disk before a client sees it.
        try connection.setPragma("synchronous", "FULL", expected: "2")
        try connection.execute(Self.schema)
        let (epoch, lastSeq) = try connection.inTransaction(.immediate) { () throws -> (UInt64, Int) in
            let stored = try connection.prepare("SELECT epoch, last_seq FROM meta WHERE id = 1")
            defer { stored.reset() }
            if try stored.step() { return (UInt64(bitPattern: Int64(stored.int(0))), stored.int(1)) }
            let epoch = UInt64.random(in: 1...UInt64.max)
            var seq = 0
            for name in seed() {
                seq += 1
                try Self.upsert(connection, Key(kind: .created, name: name), seq: seq)
            }
            try connection.run(
                "INSERT INTO meta (id, epoch, last_seq) VALUES (1, ?, ?)",
                [.int(Int(Int64(bitPattern: epoch))), .int(seq)])
            return (epoch, seq)
        }
        self.epoch = epoch
        let rows = try connection.scalarInt("SELECT count(*) FROM events") ?? 0
        disk = Mutex(Disk(connection: connection, lastSeq: lastSeq, rowsAtMost: rows))
        sequence = SequenceWaiters(lastSeq)
    }

    /// The sequence of the latest durable event (events recorded since are not counted until their flush).
    public var lastSeq: Int { sequence.current }

    /// Records that `name` was created, written or deleted; its flush follows within `window`. Quick and free of
    /// I/O: called by every commit.
    public func record(_ name: String, _ kind: DatabaseEvent) {
        let schedule = pending.withLock { pending -> Bool in
            guard !pending.closed else { return false }
            pending.order[Key(kind: kind, name: name)] = pending.next
            pending.next += 1
            defer { pending.flushScheduled = true }
            return !pending.flushScheduled
        }
        if schedule { scheduleFlush() }
    }

    private func scheduleFlush() {
        let nanoseconds = SequenceWaiters.nanoseconds(window)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.flushScheduled()
        }
    }

    private func flushScheduled() {
        pending.withLock { $0.flushScheduled = false }
        try? flush()
    }

    /// Schedules a flush unless one is: after a failed one, its events wait a window (a full disk may have room).
    private func retryLater() {
        let schedule = pending.withLock { pending -> Bool in
            guard !pending.closed, !pending.flushScheduled else { return false }
            pending.flushScheduled = true
            return true
        }
        if schedule { scheduleFlush() }
    }

    /// Writes the pending events now, each with the next sequence in the order they happened, and wakes the
    /// waiting feeds. A reader calls it first so that it sees what happened before it asked.
    /// - Throws: `SQLiteError` when the write fails; the events stay pending (a later flush writes them).
    public func flush() throws {
        try disk.withLock { disk in
            guard !disk.closed else { return }
            // Taken under the disk lock, so two flushes give their batches sequences in the order they were taken.
            let batch = pending.withLock { pending -> [(key: Key, value: Int)] in
                defer { pending.order.removeAll() }
                return pending.order.sorted { $0.value < $1.value }
            }
            guard !batch.isEmpty else { return }
            var seq = disk.lastSeq
            do {
                try disk.connection.inTransaction(.immediate) {
                    // Read under the write lock: another process on the same data dir (`couchlite push`'s local
                    // app) may have written since.
                    seq = max(seq, try disk.connection.scalarInt("SELECT last_seq FROM meta WHERE id = 1") ?? 0)
                    for (key, _) in batch {
                        seq += 1
                        try Self.upsert(disk.connection, key, seq: seq)
                    }
                    try disk.connection.run("UPDATE meta SET last_seq = ? WHERE id = 1", [.int(seq)])
                }
            } catch {
                pending.withLock { pending in
                    // An event recorded again meanwhile is newer: it keeps its place.
                    for (key, order) in batch where pending.order[key] == nil { pending.order[key] = order }
                }
                retryLater()
                throw error
            }
            disk.lastSeq = seq
            disk.rowsAtMost += batch.count
            if disk.rowsAtMost > maxEntries + maxEntries / 10 { try? trim(&disk) }
            sequence.publish(seq)
        }
    }

    private static func upsert(_ connection: SQLiteConnection, _ key: Key, seq: Int) throws {
        try connection.run(
            "INSERT INTO events (kind, name, seq) VALUES (?, ?, ?) ON CONFLICT (kind, name) DO UPDATE SET seq = ?",
            [.text(key.kind.rawValue), .text(key.name), .int(seq), .int(seq)])
    }

    /// Deletes all but the newest `maxEntries` rows (a tenth more than the bound is allowed before, so a trim is
    /// paid once per many events).
    private func trim(_ disk: inout Disk) throws {
        try disk.connection.run(
            "DELETE FROM events WHERE seq <= (SELECT seq FROM events ORDER BY seq DESC LIMIT 1 OFFSET ?)",
            [.int(maxEntries)])
        disk.rowsAtMost = try disk.connection.scalarInt("SELECT count(*) FROM events") ?? 0
    }

    /// Calls `body` with the events after `since`, in sequence order (newest first when `descending`), at most
    /// `limit`. Reads a page at a time and calls `body` outside the lock, so a feed writing to a slow client
    /// never holds up a flush.
    /// - Throws: what `body` throws, or `SQLiteError` if a read fails.
    public func forEach(
        after since: Int, descending: Bool = false, limit: Int = Int.max, _ body: (Event) throws -> Void
    ) throws {
        var left = max(0, limit)
        // The bound still open on the far side: ascending pages move `lower` up, descending ones `upper` down.
        var lower = since
        var upper = Int.max
        while left > 0 {
            let want = min(left, Self.pageSize)
            let page = try self.page(after: lower, before: upper, descending: descending, limit: want)
            for event in page { try body(event) }
            left -= page.count
            guard page.count == want, let last = page.last else { return }
            if descending { upper = last.seq } else { lower = last.seq }
        }
    }

    /// The events after `since` as an array (tests, and callers that want a few).
    public func events(after since: Int, descending: Bool = false, limit: Int = Int.max) throws -> [Event] {
        var events: [Event] = []
        try forEach(after: since, descending: descending, limit: limit) { events.append($0) }
        return events
    }

    private func page(after lower: Int, before upper: Int, descending: Bool, limit: Int) throws -> [Event] {
        try disk.withLock { disk in
            guard !disk.closed else { return [] }
            let statement = try disk.connection.prepare(
                "SELECT kind, name, seq FROM events WHERE seq > ? AND seq < ? ORDER BY seq "
                    + (descending ? "DESC" : "ASC") + " LIMIT ?")
            defer { statement.reset() }
            try statement.bind([.int(lower), .int(upper), .int(limit)])
            var events: [Event] = []
            while try statement.step() {
                // A row this code did not write (another kind) is passed over rather than trusted.
                guard let kind = DatabaseEvent(rawValue: statement.text(0)) else { continue }
                events.append(Event(name: statement.text(1), kind: kind, seq: statement.int(2)))
            }
            return events
        }
    }

    /// Blocks until an event after `seq` is durable or `timeout`; returns the latest seq. Call it off the
    /// cooperative pool.
    public func wait(after seq: Int, timeout: Duration) -> Int {
        sequence.wait(after: seq, timeout: timeout)
    }

    /// Writes what is pending and closes the file; later events are not recorded, waiting feeds wake.
    public func close() {
        try? flush()
        pending.withLock { $0.closed = true }
        disk.withLock { disk in
            guard !disk.closed else { return }
            disk.closed = true
            disk.connection.close()
        }
        sequence.wakeAll()
    }
}

/// Creates an empty file at `path` with mode `0600` unless one exists: owner-only from its creation whatever the
/// umask (`couchlite push` sets none), never made readable first and narrowed after. SQLite gives the log's `-wal`
/// and `-shm` the same mode.
private func createOwnerOnly(_ path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    if fd >= 0 { close(fd) }
}
