import Synchronization

/// Read connections of one database. Each read runs in its own transaction on a connection nobody else uses, so it
/// sees one committed snapshot (WAL) and never blocks the writer.
final class ReaderPool: Sendable {
    /// Idle connections kept for reuse; more are opened on demand and closed when returned over this count.
    static let maxIdle = 8
    /// Bytes of the database file each reader maps instead of copying pages in with `pread` (SQLite reads pages
    /// past this, and WAL frames, the ordinary way). Address space only; the kernel shares the page cache.
    static let mmapBytes = 1 << 30
    /// Page cache of each reader, in KiB (SQLite's default is 2,000).
    static let cacheKiB = 8 * 1024

    private let path: String
    private let idle = Mutex<(connections: [SQLiteConnection], closed: Bool)>(([], false))

    init(path: String) {
        self.path = path
    }

    /// Runs `body` in a read transaction.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let taken = try idle.withLock { idle -> SQLiteConnection? in
            guard !idle.closed else { throw StoreError.dbNotFound }
            return idle.connections.popLast()
        }
        let connection = try taken ?? open()
        try connection.run(.begin)
        defer {
            try? connection.run(.commit)
            idle.withLock { idle in
                if !idle.closed && idle.connections.count < ReaderPool.maxIdle { idle.connections.append(connection) }
            }
        }
        return try body(connection)
    }

    func close() {
        idle.withLock { idle in
            idle.closed = true
            idle.connections.removeAll()
        }
    }

    private func open() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, readOnly: false, create: false)
        try connection.execute("PRAGMA query_only = 1")
        try connection.execute("PRAGMA mmap_size = \(ReaderPool.mmapBytes)")
        try connection.execute("PRAGMA cache_size = -\(ReaderPool.cacheKiB)")
        return connection
    }
}
