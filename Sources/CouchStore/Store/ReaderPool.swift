import Dispatch
import Synchronization

/// Read connections of one database. Each read runs in its own transaction on a connection nobody else uses, so it
/// sees one committed snapshot (WAL) and never blocks the writer.
final class ReaderPool: Sendable {
    /// Idle connections kept for reuse; more are opened on demand and closed when returned over this count.
    static let maxIdle = 8
    /// Connections open at once. 2,000 long-poll feeds woken by one commit would otherwise each open a
    /// connection (schema parse, page cache) at the same moment; bounded, they take turns. A thread must not
    /// start a read inside its own read (it could wait for itself): callers read rows first, then render.
    static let maxOpen = 16
    /// Bytes of the database file each reader memory-maps. Zero: mapped pages count in the server's resident
    /// memory once per connection and per database, so a server with a few large databases and eight readers
    /// each grew by hundreds of MiB (bench/run: 685 MiB after `pull`); `pread` keeps memory flat for a
    /// measured ~1.3× on raw read loops.
    static let mmapBytes = 0
    /// Page cache of each reader, in KiB (about SQLite's default): bounded, since up to `maxIdle` readers per open
    /// database keep theirs. A miss is a `pread` served from the kernel's page cache, so a bigger cache buys little:
    /// 4 MiB against 2 MiB gave the same `_changes`, `_bulk_get` and random-read throughput in `bench/run` and held
    /// 16 MiB more per database after a pull.
    static let cacheKiB = 2 * 1024

    private let path: String
    /// Each idle connection with the bytes its page cache held when it came back (counted in `gauge`).
    private let idle = Mutex<(connections: [(SQLiteConnection, cached: Int)], closed: Bool)>(([], false))
    private let slots = DispatchSemaphore(value: ReaderPool.maxOpen)
    private let gauge: PageCacheGauge

    /// - Parameter gauge: counts the idle connections' page caches.
    init(path: String, gauge: PageCacheGauge) {
        self.path = path
        self.gauge = gauge
    }

    /// Runs `body` in a read transaction (`SQLiteConnection.reading`) on an idle connection, or a new one; it goes
    /// back to the pool only once its `BEGIN` succeeded.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        slots.wait()
        defer { slots.signal() }
        let taken = try idle.withLock { idle -> (SQLiteConnection, cached: Int)? in
            guard !idle.closed else { throw StoreError.dbNotFound }
            return idle.connections.popLast()
        }
        if let taken { gauge.reader(-taken.cached) }
        let connection = try taken?.0 ?? open()
        var began = false
        defer {
            // Back to the pool once its transaction has ended, and only if it began (else it is closed).
            if began { keep(connection) }
        }
        return try connection.reading { connection in
            began = true
            return try body(connection)
        }
    }

    /// Puts a connection whose read has ended back among the idle ones (closed instead beyond `maxIdle`).
    private func keep(_ connection: SQLiteConnection) {
        let cached = connection.cacheUsedBytes
        let kept = idle.withLock { idle in
            guard !idle.closed && idle.connections.count < ReaderPool.maxIdle else { return false }
            idle.connections.append((connection, cached))
            return true
        }
        if kept { gauge.reader(cached) }
    }

    /// Closes the idle connections now; one lent out is closed when its read returns.
    /// - Parameter persistWAL: keep the WAL files (see ``SQLiteConnection/persistWAL()``).
    func close(persistWAL: Bool = false) {
        let connections = idle.withLock { idle in
            idle.closed = true
            defer { idle.connections.removeAll() }
            return idle.connections
        }
        for (connection, cached) in connections {
            gauge.reader(-cached)
            if persistWAL { connection.persistWAL() }
            connection.close()
        }
    }

    private func open() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, readOnly: false, create: false)
        try connection.setPragma("query_only", "1")
        try connection.setPragma("mmap_size", "\(ReaderPool.mmapBytes)", noAnswerAccepted: ReaderPool.mmapBytes == 0)
        try connection.setPragma("cache_size", "-\(ReaderPool.cacheKiB)")
        return connection
    }
}
