import Dispatch
import Foundation
import RevTree
import Synchronization

/// One CouchDB database: one SQLite file in WAL mode, one group-committing writer, pooled readers.
///
/// Durability: every commit's WAL frames are synced to disk before its callers return, so a write survives
/// `kill -9` and power loss (CouchDB acknowledges only durable writes). `WriteQueue` shares each commit among
/// concurrent writers and each WAL sync among the commits made while the previous one was on its way to disk.
///
/// A `Database` is the name's one handle for the life of its `Store`; what it costs to keep open (SQLite
/// connections, the writer, sync and checkpoint threads: a ``DatabaseEngine``) comes and goes under it. Every
/// operation leases the engine, opening it again if the store's bound (``OpenDatabases``) closed it while idle,
/// so a caller never notices; ``lease()`` keeps it open across operations (a feed, a stream, a replication).
public final class Database: Sendable {
    /// The database name.
    public let name: String
    /// Path of the SQLite file.
    public let path: String
    private let published: PublishedState
    /// The uuid this database file was created with: a database deleted and created again under the same name
    /// has a new one, so state kept beside it (view indexes) can tell it is stale.
    public let uuid: String
    private let designWrites = Atomic<Int>(0)
    /// Created by this store (not opened from an existing file): it started with no documents at all.
    private let createdEmpty: Bool
    /// The open engine and how many users hold it.
    private let usage = Mutex(Usage())
    /// The bound this database counts against; nil for one opened outside a `Store`'s bound.
    let registry: OpenDatabases?
    /// When the engine was last leased, on the registry's clock (least recently used closes first).
    let lastUse = Atomic<UInt64>(0)

    struct Published {
        var revsLimit: Int
    }

    /// Committed facts shared between the writer thread and readers.
    final class PublishedState: Sendable {
        let mutex: Mutex<Published>
        /// The committed update sequence, and the feeds waiting for it to move.
        let sequence = SequenceWaiters()
        init(_ value: Published) { mutex = Mutex(value) }
        func withLock<T>(_ body: (inout Published) throws -> T) rethrows -> T { try mutex.withLock { try body(&$0) } }
    }

    private struct Usage {
        var engine: DatabaseEngine?
        /// Operations and ``DatabaseLease``s running now; the engine is closed by the bound only at zero.
        var leases = 0
        /// Deleted, or its store closed: every later use is `.dbNotFound`.
        var shutDown = false
    }

    /// Opens (creating when `create`) the file at `path` and migrates it.
    init(name: String, path: String, create: Bool, registry: OpenDatabases? = nil) throws {
        self.name = name
        self.path = path
        self.registry = registry
        self.createdEmpty = create
        let published = PublishedState(Published(revsLimit: RevTreeLimits.defaultRevsLimit))
        self.published = published
        let engine = try DatabaseEngine(path: path, create: create, published: published, registry: registry)
        uuid = engine.uuid
        usage.withLock { $0.engine = engine }
        lastUse.store(registry?.tick() ?? 0, ordering: .relaxed)
        registry?.opened(self)
    }

    /// The latest committed update sequence.
    public var updateSeq: Int { published.sequence.current }

    /// A count of committed batches that wrote a `_design/` document: a cache of what design documents
    /// hold (their validation functions) is current while this has not moved since it was read.
    public var designGeneration: Int { designWrites.load(ordering: .acquiring) }

    /// False only while it is known to hold no design document without reading it: created by this store and
    /// no design document written since (``designGeneration`` still 0). A cache of design functions then needs
    /// no read (which would open a reader connection on each new database's first write).
    public var mayHoldDesignDocuments: Bool { !createdEmpty || designGeneration != 0 }

    /// Called after a batch that wrote design documents committed.
    func designDocumentsChanged() { designWrites.wrappingAdd(1, ordering: .releasing) }

    /// `_revs_limit`: how many revisions each branch keeps.
    public var revsLimit: Int { published.withLock { $0.revsLimit } }

    /// Deleted, or its store closed: it never changes again, and every later use is `.dbNotFound`.
    public var isShutDown: Bool { usage.withLock { $0.shutDown } }

    /// Whether its engine is open now (a closed one reopens at the next use).
    public var isOpen: Bool { usage.withLock { $0.engine != nil } }

    /// Keeps the database open until the lease is released: the store's bound never closes a leased database.
    /// - Throws: `.dbNotFound` once deleted; the engine's failure if it had to be opened again and could not.
    public func lease() throws -> DatabaseLease {
        _ = try acquire()
        return DatabaseLease(self)
    }

    /// Runs `body` with the engine open, opening it again first if it was closed while idle.
    func withEngine<T>(_ body: (DatabaseEngine) throws -> T) throws -> T {
        let engine = try acquire()
        defer { release() }
        return try body(engine)
    }

    /// Runs `body` in a read transaction of a pooled reader.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withEngine { try $0.readers.read(body) }
    }

    /// Runs `body` in the writer's next group transaction (see ``WriteQueue/perform(checkpointAfter:_:)``).
    func write<T: Sendable>(checkpointAfter: Bool = false, _ body: @escaping @Sendable (SQLiteConnection) throws -> T)
        throws -> T
    {
        let result = try withEngine { try $0.writer.perform(checkpointAfter: checkpointAfter, body) }
        registry?.events.notify(name, .updated)
        return result
    }

    private func acquire() throws -> DatabaseEngine {
        lastUse.store(registry?.tick() ?? 0, ordering: .relaxed)
        let outcome = usage.withLock { usage -> Result<(DatabaseEngine, Bool), any Error> in
            guard !usage.shutDown else { return .failure(StoreError.dbNotFound) }
            if let engine = usage.engine {
                usage.leases += 1
                return .success((engine, false))
            }
            do {
                let engine = try DatabaseEngine(path: path, create: false, published: published, registry: registry)
                usage.engine = engine
                usage.leases += 1
                registry?.opened(self)
                return .success((engine, true))
            } catch {
                return .failure(error)
            }
        }
        let (engine, reopened) = try outcome.get()
        // Over the bound now: close the least recently used idle databases (never this one, it is leased).
        if reopened { registry?.trim() }
        return engine
    }

    /// Ends one lease; the last one lets the bound close the database if too many are open.
    func release() {
        let idle = usage.withLock { usage -> Bool in
            usage.leases -= 1
            return usage.leases == 0
        }
        if idle { registry?.trim() }
    }

    /// Closes the engine if nobody uses it (the bound's eviction). Returns whether it did.
    func closeIfIdle() -> Bool {
        usage.withLock { usage in
            guard usage.leases == 0, !usage.shutDown, let engine = usage.engine else { return false }
            // Its -wal and -shm stay, so it can be opened again on a full disk.
            engine.close(persistWAL: true)
            usage.engine = nil
            registry?.closed(self)
            return true
        }
    }

    /// Blocks until `updateSeq > seq` or `timeout` passes; returns the current `updateSeq`. Woken by commits, no
    /// polling. Call it off the cooperative thread pool.
    public func waitForChange(after seq: Int, timeout: Duration) -> Int {
        published.sequence.wait(after: seq, timeout: timeout)
    }

    /// Sets `_revs_limit`; applied to each document at its next update.
    /// - Throws: `StoreError.badRequest` unless 1 ≤ `n` ≤ `RevTreeLimits.maxRevsLimit`.
    public func setRevsLimit(_ n: Int) throws {
        guard n >= 1, n <= RevTreeLimits.maxRevsLimit else {
            throw StoreError.badRequest("_revs_limit must be a positive integer")
        }
        try write { try $0.run("UPDATE db_meta SET revs_limit = ? WHERE id = 1", [.int(n)]) }
    }

    /// Stops the writer (after finishing queued writes) and closes connections, for good: the database was
    /// deleted or its store closed. Later calls throw `.dbNotFound`; waiting feeds wake.
    func close() {
        usage.withLock { usage in
            usage.shutDown = true
            if let engine = usage.engine {
                engine.close()
                usage.engine = nil
                registry?.closed(self)
            }
        }
        published.sequence.wakeAll()
    }
}

/// A hold on an open ``Database`` (``Database/lease()``): until ``release()`` the store's bound does not close
/// it. Release it exactly when the use ends (`defer`); one never released is released when it is freed.
public final class DatabaseLease: Sendable {
    /// The database held open.
    public let database: Database
    private let released = Atomic<Bool>(false)

    init(_ database: Database) { self.database = database }

    deinit { release() }

    /// Lets the database close again when idle; later calls do nothing.
    public func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        database.release()
    }
}

/// What an open database holds: the writing connection with its writer thread, the checkpoint thread
/// and the reader pool. Made by ``Database`` when first used and again after the bound closed it.
final class DatabaseEngine: Sendable {
    let writer: WriteQueue
    let readers: ReaderPool
    let checkpointer: Checkpointer
    /// The uuid the file was created with (`Database.uuid`).
    let uuid: String

    /// Opens (creating when `create`) the file at `path`, migrates it and publishes its committed state.
    /// - Parameter registry: the bound the database counts against, whose writers' page-cache budget the writer
    ///   shares (a budget of its own without one) and whose gauge counts its page caches.
    init(path: String, create: Bool, published: Database.PublishedState, registry: OpenDatabases?) throws {
        let budget = registry?.writerCache ?? WriterCacheBudget()
        let gauge = registry?.pageCache ?? PageCacheGauge()
        let connection = try SQLiteConnection(path: path, readOnly: false, create: create)
        try connection.setPragma("journal_mode", "WAL")
        try connection.setPragma("synchronous", "FULL", expected: "2")
        // Savepoint and statement journals (one `SAVEPOINT` per group-commit job) live in memory instead of
        // spilling to temporary files past 64 KiB; they hold at most the pages one transaction touches and are
        // never needed after a crash (the WAL is the durable record).
        try connection.setPragma("temp_store", "MEMORY", expected: "2")
        // The writer's share of the budget is set before its first group transaction (`WriteQueue`).
        try connection.setPragma("cache_size", "-\(WriterCacheBudget.minimumKiB)")
        try Schema.migrate(connection, uuid: UUID().uuidString.lowercased())
        let statement = try connection.prepare("SELECT update_seq, revs_limit FROM db_meta WHERE id = 1")
        guard try statement.step() else { throw StoreError.internalError("db_meta row missing") }
        let updateSeq = statement.int(0)
        let revsLimit = statement.int(1)
        statement.reset()
        let uuidStatement = try connection.prepare("SELECT uuid FROM db_meta WHERE id = 1")
        uuid = try uuidStatement.step() ? uuidStatement.text(0) : ""
        uuidStatement.reset()
        published.withLock { $0.revsLimit = revsLimit }
        published.sequence.publish(updateSeq)
        self.checkpointer = Checkpointer(path: path, writer: connection)
        self.readers = ReaderPool(path: path, gauge: gauge)
        self.writer = WriteQueue(connection: connection, cache: budget, gauge: gauge) { connection in
            guard let meta = try? Meta.load(connection) else { return nil }
            return {
                published.withLock { $0.revsLimit = meta.revsLimit }
                published.sequence.publish(meta.updateSeq)
            }
        }
    }

    /// Finishes queued writes, stops the threads and closes every connection.
    /// - Parameter persistWAL: keep the WAL files (an idle database closed by the bound, not a deleted one).
    func close(persistWAL: Bool = false) {
        // The checkpointer first: its passes open connections of their own, never the file's last while the
        // writer's is open. Writes still queued then commit without a background pass (SQLite's last close
        // checkpoints what they leave).
        checkpointer.close()
        writer.close(persistWAL: persistWAL)
        readers.close(persistWAL: persistWAL)
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
