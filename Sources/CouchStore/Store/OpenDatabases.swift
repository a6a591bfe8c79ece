import Synchronization

/// The bound on open databases (CouchDB's `max_dbs_open`): which databases have their engine open, and closing
/// the least recently used idle ones once more than `limit` are.
///
/// A database is idle when nobody leases it (no operation running, no ``DatabaseLease`` held: an open feed, an
/// attachment stream, a replication). When every open database is in use the bound is exceeded rather than a
/// request failed (CouchDB answers `all_dbs_active` there); the excess closes as soon as leases end. Names in
/// `exempt` (CouchDB's system databases) are never closed and not counted, as CouchDB's `sys_db`s.
///
/// Locking: a database's own lock may be held while this one is taken (``opened(_:)``, ``closed(_:)``), never
/// the other way round; ``trim()`` takes its snapshot here and then each database's lock alone.
final class OpenDatabases: Sendable {
    /// Most databases kept open while idle.
    let limit: Int
    let exempt: Set<String>
    private let open = Mutex<[ObjectIdentifier: Database]>([:])
    /// Open `exempt` databases: counted in ``total`` only.
    private let pinned = Mutex<Set<ObjectIdentifier>>([])
    private let clock = Atomic<UInt64>(0)
    private let trimming = Mutex(())
    /// The page cache the open databases' writers share.
    let writerCache: WriterCacheBudget
    /// What the open databases' page caches hold.
    let pageCache = PageCacheGauge()
    /// Who hears of databases created, written and deleted (`_db_updates`).
    let events = DatabaseEventObserver()

    /// What an interactive edit hashes for an attachment whose CouchDB md5 is not its digest (see `Store.init`).
    let attachmentHashDigest: AttachmentHashDigest?

    init(
        limit: Int, exempt: Set<String>, writerCache: WriterCacheBudget,
        attachmentHashDigest: AttachmentHashDigest? = nil
    ) {
        self.attachmentHashDigest = attachmentHashDigest
        self.limit = max(1, limit)
        self.exempt = exempt
        self.writerCache = writerCache
    }

    /// How many counted databases are open now.
    var count: Int { open.withLock { $0.count } }

    /// How many databases are open now, `exempt` ones included.
    var total: Int { count + pinned.withLock { $0.count } }

    /// The next value of the use clock.
    func tick() -> UInt64 { clock.add(1, ordering: .relaxed).newValue }

    /// `database` opened its engine.
    func opened(_ database: Database) {
        if exempt.contains(database.name) {
            _ = pinned.withLock { $0.insert(ObjectIdentifier(database)) }
        } else {
            open.withLock { $0[ObjectIdentifier(database)] = database }
        }
    }

    /// `database` closed its engine.
    func closed(_ database: Database) {
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(database)) }
        _ = pinned.withLock { $0.remove(ObjectIdentifier(database)) }
    }

    /// Closes idle databases, least recently used first, until at most `limit` are open or none is idle.
    /// One trim runs at a time, re-counting before each close, so concurrent callers never close more than the
    /// excess.
    func trim() {
        guard count > limit else { return }
        trimming.withLock { _ in
            let candidates = open.withLock { Array($0.values) }
            let byAge = candidates.map { ($0.lastUse.load(ordering: .relaxed), $0) }.sorted { $0.0 < $1.0 }
            for (_, database) in byAge {
                guard count > limit else { return }
                _ = database.closeIfIdle()
            }
        }
    }
}
