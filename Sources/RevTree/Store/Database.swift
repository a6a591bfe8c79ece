import Dispatch
import Foundation
import Synchronization

/// One CouchDB database: one SQLite file in WAL mode, one group-committing writer, pooled readers.
///
/// Durability: every commit's WAL frames are synced to disk before its callers return, so a write survives
/// `kill -9` and power loss (CouchDB acknowledges only durable writes). `WriteQueue` shares each commit among
/// concurrent writers and each WAL sync among the commits made while the previous one was on its way to disk.
public final class Database: Sendable {
    /// The database name.
    public let name: String
    /// Path of the SQLite file.
    public let path: String
    let writer: WriteQueue
    /// Page cache of the writer connection, in KiB (SQLite's default is 2,000): index pages of large databases stay
    /// cached between commits instead of being re-read.
    static let writerCacheKiB = 16 * 1024
    let readers: ReaderPool
    let checkpointer: Checkpointer
    private let published: PublishedState
    /// The uuid this database file was created with: a database deleted and created again under the same name
    /// has a new one, so state kept beside it (view indexes) can tell it is stale.
    public let uuid: String
    private let designWrites = Atomic<Int>(0)

    struct Published {
        var updateSeq: Int
        var revsLimit: Int
        var waiters: [DispatchSemaphore] = []
    }

    /// Committed facts shared between the writer thread and readers.
    final class PublishedState: Sendable {
        let mutex: Mutex<Published>
        init(_ value: Published) { mutex = Mutex(value) }
        func withLock<T>(_ body: (inout Published) throws -> T) rethrows -> T { try mutex.withLock { try body(&$0) } }
    }

    /// Opens (creating when `create`) the file at `path` and migrates it.
    init(name: String, path: String, create: Bool) throws {
        self.name = name
        self.path = path
        let connection = try SQLiteConnection(path: path, readOnly: false, create: create)
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = FULL")
        // Savepoint and statement journals (one `SAVEPOINT` per group-commit job) live in memory instead of
        // spilling to temporary files past 64 KiB; they hold at most the pages one transaction touches and are
        // never needed after a crash (the WAL is the durable record).
        try connection.execute("PRAGMA temp_store = MEMORY")
        try connection.execute("PRAGMA cache_size = -\(Database.writerCacheKiB)")
        try Schema.migrate(connection, uuid: UUID().uuidString.lowercased())
        // From here on commits only write the WAL; `WriteQueue` syncs it before anyone is answered.
        try connection.execute("PRAGMA synchronous = NORMAL")
        let statement = try connection.prepare("SELECT update_seq, revs_limit FROM db_meta WHERE id = 1")
        guard try statement.step() else { throw StoreError.internalError("db_meta row missing") }
        let initial = Published(updateSeq: statement.int(0), revsLimit: statement.int(1))
        statement.reset()
        let uuidStatement = try connection.prepare("SELECT uuid FROM db_meta WHERE id = 1")
        uuid = try uuidStatement.step() ? uuidStatement.text(0) : ""
        uuidStatement.reset()
        self.checkpointer = try Checkpointer(path: path, writer: connection)
        let published = PublishedState(initial)
        self.published = published
        self.readers = ReaderPool(path: path)
        self.writer = WriteQueue(connection: connection, sync: WALFile(path: path + "-wal").sync) { connection in
            guard let meta = try? Meta.load(connection) else { return nil }
            return {
                let waiters = published.withLock { state -> [DispatchSemaphore] in
                    state.updateSeq = meta.updateSeq
                    state.revsLimit = meta.revsLimit
                    defer { state.waiters.removeAll() }
                    return state.waiters
                }
                for waiter in waiters { waiter.signal() }
            }
        }
    }

    /// The latest committed update sequence.
    public var updateSeq: Int { published.withLock { $0.updateSeq } }

    /// A count of committed batches that wrote a `_design/` document: a cache of what design documents
    /// hold (their validation functions) is current while this has not moved since it was read.
    public var designGeneration: Int { designWrites.load(ordering: .acquiring) }

    /// Called after a batch that wrote design documents committed.
    func designDocumentsChanged() { designWrites.wrappingAdd(1, ordering: .releasing) }

    /// `_revs_limit`: how many revisions each branch keeps.
    public var revsLimit: Int { published.withLock { $0.revsLimit } }

    /// Blocks until `updateSeq > seq` or `timeout` passes; returns the current `updateSeq`. Woken by commits, no
    /// polling. Call it off the cooperative thread pool.
    public func waitForChange(after seq: Int, timeout: Duration) -> Int {
        let semaphore = DispatchSemaphore(value: 0)
        let ready = published.withLock { state -> Int? in
            if state.updateSeq > seq { return state.updateSeq }
            state.waiters.append(semaphore)
            return nil
        }
        if let ready { return ready }
        let (seconds, attoseconds) = timeout.components
        let nanos = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
        _ = semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: nanos)))
        return published.withLock { state in
            state.waiters.removeAll { $0 === semaphore }
            return state.updateSeq
        }
    }

    /// Sets `_revs_limit`; applied to each document at its next update.
    /// - Throws: `StoreError.badRequest` unless 1 ≤ `n` ≤ `RevTreeLimits.maxRevsLimit`.
    public func setRevsLimit(_ n: Int) throws {
        guard n >= 1, n <= RevTreeLimits.maxRevsLimit else {
            throw StoreError.badRequest("_revs_limit must be a positive integer")
        }
        try writer.perform { try $0.run("UPDATE db_meta SET revs_limit = ? WHERE id = 1", [.int(n)]) }
    }

    /// Stops the writer (after finishing queued writes) and closes connections. Later calls throw `.dbNotFound`.
    func close() {
        writer.close()
        checkpointer.close()
        readers.close()
        published.withLock { state in
            for waiter in state.waiters { waiter.signal() }
            state.waiters.removeAll()
        }
    }
}

/// The `db_meta` row as the writer keeps it during one job.
struct Meta {
    var updateSeq: Int
    var revsLimit: Int
    var docCount: Int
    var docDelCount: Int
    var purgeSeq: Int
    /// Body bytes of every document's leaves (`sizes.external`).
    var externalSize: Int
    /// Not stored: whether the job's previous replicated write created its document. A batch's documents tend to
    /// be alike — all new in a first replication, mostly stored in later ones — so it predicts the next one.
    var lastWriteCreated = true

    static func load(_ connection: SQLiteConnection) throws -> Meta {
        let statement = try connection.statement(.loadMeta)
        defer { statement.rewind() }
        guard try statement.step() else { throw StoreError.internalError("db_meta row missing") }
        return Meta(
            updateSeq: statement.int(0), revsLimit: statement.int(1), docCount: statement.int(2),
            docDelCount: statement.int(3), purgeSeq: statement.int(4), externalSize: statement.int(5))
    }

    func save(_ connection: SQLiteConnection) throws {
        let statement = try connection.statement(.saveMeta)
        defer { statement.rewind() }
        try statement.bind(1, updateSeq)
        try statement.bind(2, docCount)
        try statement.bind(3, docDelCount)
        try statement.bind(4, externalSize)
        while try statement.step() {}
    }
}
