import CSQLite

/// One SQLite connection with a statement cache.
///
/// Not thread-safe by itself: a connection is owned by the writer thread or lent by the reader pool to one caller
/// at a time, which is why `@unchecked Sendable` is safe (it moves between threads, never runs on two at once).
final class SQLiteConnection: @unchecked Sendable {
    let handle: OpaquePointer
    private var cache: [String: SQLiteStatement] = [:]
    /// Hot statements by `Query.rawValue`: an array slot, so fetching one hashes no SQL text.
    private var hot = [SQLiteStatement?](repeating: nil, count: Query.allCases.count)
    /// Whatever `sqlite3_wal_hook`'s context points to, kept alive as long as the hook can fire.
    var walHookOwner: AnyObject?

    /// Process-wide SQLite settings, applied once before the first connection opens (every connection of the
    /// process is one of these): no global memory statistics (nothing reads them, and they take a global mutex
    /// around every allocation of every connection), and no page cache set aside per connection before it caches
    /// anything (about 86 KB each by default, three or more connections per open database: it was most of what
    /// an open database cost, see `couchlite_no_page_cache_preallocation`).
    /// Whether they were applied: false if something in the process initialized SQLite before the first connection
    /// (a test's own SQLite calls must call ``configureProcess()`` first).
    private static let configured: Bool = {
        let statistics = couchlite_disable_memory_statistics()
        let preallocation = couchlite_no_page_cache_preallocation()
        return statistics == SQLITE_OK && preallocation == SQLITE_OK
    }()

    /// Applies the process-wide settings if nothing has yet; returns whether they are in force.
    @discardableResult
    static func configureProcess() -> Bool { configured }

    /// Opens (and with `create`, creates) the file at `path`.
    init(path: String, readOnly: Bool, create: Bool) throws {
        _ = SQLiteConnection.configured
        var db: OpaquePointer?
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
        if create { flags |= SQLITE_OPEN_CREATE }
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, message: message, sql: nil)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 10_000)
        // Defaults for every connection; the writer and readers set their own cache sizes. No memory-mapped I/O:
        // mapped pages count in resident memory once per connection (see `ReaderPool.mmapBytes`).
        try setPragma("cache_size", "-\(SQLiteConnection.cacheKiB)")
        try setPragma("mmap_size", "\(SQLiteConnection.mmapBytes)", noAnswerAccepted: SQLiteConnection.mmapBytes == 0)
        try setPragma("journal_size_limit", "\(SQLiteConnection.walSizeLimitBytes)")
    }

    /// Makes this connection, if it is the file's last to close, keep the `-wal` (emptied, as a size limit is
    /// set) and `-shm` files instead of deleting them (`SQLITE_FCNTL_PERSIST_WAL`). Used when the open-database
    /// bound closes an idle database: creating the `-shm` anew needs free space (`SQLITE_IOERR_SHMSIZE` on a full
    /// disk), so without it every read of that database would fail until space is freed. Not used for a deleted
    /// database, whose files must go. Call it only while no other thread uses the connection.
    func persistWAL() {
        var persist: Int32 = 1
        sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
    }

    /// WAL bytes kept after a checkpoint restarts the log (`journal_size_limit`); a closing database empties it.
    static let walSizeLimitBytes = 16 << 20
    /// Page cache per connection, in KiB.
    static let cacheKiB = 2 * 1024
    /// Memory-mapped I/O window per connection, in bytes.
    static let mmapBytes = 0

    private var isClosed = false

    /// Frees every page the cache holds that no statement is using (`sqlite3_db_release_memory`); later reads
    /// fetch them again.
    func releaseMemory() {
        sqlite3_db_release_memory(handle)
    }

    deinit { close() }

    /// Finalizes the statements and closes the handle, now, on the calling thread; later calls do nothing. Owners
    /// whose threads share the connection call it once those threads have stopped, so a database is fully closed
    /// (the last connection checkpoints and removes the WAL) before its owner's `close` returns, not whenever a
    /// finished thread happens to drop its last reference.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        cache.removeAll()
        hot = []
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &error)
        if rc != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? "unknown"
            sqlite3_free(error)
            throw SQLiteError(code: rc, message: message, sql: sql)
        }
    }

    /// A cached prepared statement, reset and with bindings cleared.
    func prepare(_ sql: String) throws -> SQLiteStatement {
        if let statement = cache[sql] {
            statement.reset()
            return statement
        }
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, sql: sql) }
        let statement = SQLiteStatement(raw, connection: self, sql: sql)
        cache[sql] = statement
        return statement
    }

    /// A hot statement, prepared on first use and kept for the connection's life. The caller binds every
    /// parameter and resets it after use (`defer { statement.reset() }`); bindings are not cleared.
    func statement(_ query: Query) throws -> SQLiteStatement {
        if let statement = hot[query.rawValue] { return statement }
        var raw: OpaquePointer?
        let sql = query.sql
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard rc == SQLITE_OK, let raw else { throw error(rc, sql: sql) }
        let statement = SQLiteStatement(raw, connection: self, sql: sql)
        hot[query.rawValue] = statement
        return statement
    }

    /// Runs a hot statement without results (`BEGIN`, `COMMIT`, …) — no SQL parsing, unlike `execute`.
    /// Runs `body` in a read transaction on this connection: `BEGIN`, then `COMMIT` whatever `body` did (a read has
    /// nothing to roll back) with a failed `COMMIT` ignored. `body` runs only once `BEGIN` succeeded.
    func reading<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try run(.begin)
        defer { try? run(.commit) }
        return try body(self)
    }

    func run(_ query: Query) throws {
        let statement = try statement(query)
        defer { sqlite3_reset(statement.handle) }
        while try statement.step() {}
    }

    /// How `inTransaction` begins: `BEGIN` (deferred: the write lock is taken at the first write) or
    /// `BEGIN IMMEDIATE` (the write lock at once, so a busy file fails or waits at `BEGIN`, not midway).
    enum TransactionKind {
        case deferred, immediate
    }

    /// Runs `body` in a transaction: `BEGIN` (or `BEGIN IMMEDIATE`), `body`, `COMMIT`; returns what `body` returns.
    ///
    /// If `body` or the `COMMIT` throws, the transaction is rolled back and the error rethrown (a failed
    /// `ROLLBACK` is ignored: SQLite has already rolled back after the errors that make it fail). A failed `BEGIN`
    /// throws before `body` runs and rolls nothing back.
    ///
    /// Not nestable: called inside a transaction, its `BEGIN` fails ("cannot start a transaction within a
    /// transaction") and it throws that error without running `body` and without touching the outer transaction,
    /// which the caller can still commit, or roll back by letting the error through its own `inTransaction`.
    @discardableResult
    func inTransaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        try run(kind == .immediate ? .beginImmediate : .begin)
        do {
            let result = try body()
            try run(.commit)
            return result
        } catch {
            try? run(.rollback)
            throw error
        }
    }

    /// Sets `PRAGMA name = value` and checks that SQLite took it: the value the pragma answers (`journal_mode`,
    /// `mmap_size`, …), or else the one it reads back afterwards, must equal `expected` (default `value`),
    /// compared without regard to case. A pragma SQLite does not know answers nothing and fails the check too,
    /// unless `noAnswerAccepted`: for `mmap_size = 0`, which answers nothing where the file has no memory mapping
    /// to turn off (an in-memory database), the state it asks for.
    /// - Throws: `SQLiteError` if the statement fails or the pragma holds anything else (`journal_mode = WAL`
    ///   answers `memory` for an in-memory database, for instance).
    func setPragma(_ name: String, _ value: String, expected: String? = nil, noAnswerAccepted: Bool = false) throws {
        let set = "PRAGMA \(name) = \(value)"
        let expected = expected ?? value
        let actual = try oneShotText(set) ?? oneShotText("PRAGMA \(name)")
        if actual == nil && noAnswerAccepted { return }
        guard let actual, actual.lowercased() == expected.lowercased() else {
            throw SQLiteError(
                code: SQLITE_ERROR,
                message: "PRAGMA \(name) is \(actual ?? "nothing") after setting it, not \(expected)",
                sql: set)
        }
    }

    /// Runs `sql` as an uncached statement and returns the first column of its first row as text (nil if no row):
    /// for one-off statements such as pragmas, which would otherwise stay in the statement cache for good.
    private func oneShotText(_ sql: String) throws -> String? {
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &raw, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql: sql) }
        guard let raw else { return nil }  // only whitespace or a comment: no statement
        defer { sqlite3_finalize(raw) }
        var answer: String?
        while true {
            switch sqlite3_step(raw) {
            case SQLITE_ROW:
                if answer == nil, let text = sqlite3_column_text(raw, 0) { answer = String(cString: text) }
            case SQLITE_DONE: return answer
            case let code: throw error(code, sql: sql)
            }
        }
    }

    /// Runs `sql` with `bindings`, returning the first column of the first row as an integer (nil if no row).
    func scalarInt(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> Int? {
        let statement = try prepare(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        return try statement.step() ? statement.int(0) : nil
    }

    /// Runs a statement with `bindings` and no result rows.
    func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws {
        let statement = try prepare(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        while try statement.step() {}
    }

    /// Bytes this connection's page cache holds now (`SQLITE_DBSTATUS_CACHE_USED`).
    var cacheUsedBytes: Int {
        var current: Int32 = 0
        var highest: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
        return Int(current)
    }

    /// Pages of the database file as this connection sees it (`PRAGMA page_count`; 0 if it cannot be read).
    var pageCount: Int { (try? scalarInt("PRAGMA page_count")) ?? 0 }

    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var changes: Int { Int(sqlite3_changes(handle)) }

    func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

/// A value bound to a statement parameter.
enum SQLiteValue {
    case int(Int)
    case text(String)
    case blob([UInt8])
    case null
}

/// A prepared statement; finalized with its connection's cache.
final class SQLiteStatement {
    let handle: OpaquePointer
    unowned let connection: SQLiteConnection
    let sql: String

    init(_ handle: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Resets without clearing bindings: for hot statements whose every parameter is bound before each use.
    func rewind() { sqlite3_reset(handle) }

    // Typed binds: no `[SQLiteValue]` array per call. Parameter indices start at 1.

    func bind(_ index: Int32, _ value: Int) throws {
        let rc = sqlite3_bind_int64(handle, index, Int64(value))
        guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
    }

    func bind(_ index: Int32, _ value: Bool) throws { try bind(index, value ? 1 : 0) }

    func bind(_ index: Int32, _ value: Int?) throws {
        guard let value else { return try bindNull(index) }
        try bind(index, value)
    }

    func bind(_ index: Int32, _ value: String) throws {
        var value = value
        let rc = value.withUTF8 { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                couchlite_bind_text(handle, index, $0.baseAddress, Int32($0.count))
            }
        }
        guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
    }

    func bind(_ index: Int32, blob value: [UInt8]) throws {
        // A zero-length blob must still be a blob, not NULL: bind a non-nil pointer.
        let rc =
            value.isEmpty
            ? sqlite3_bind_zeroblob(handle, index, 0)
            : value.withUnsafeBytes { couchlite_bind_blob(handle, index, $0.baseAddress, Int32($0.count)) }
        guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
    }

    /// Binds bytes that SQLite reads in place (`SQLITE_STATIC`) instead of copying: call it only inside the
    /// closure that lends `bytes`, and step the statement to completion before that closure returns. Every use of
    /// the statement must bind the parameter again, as the hot statements do.
    func bindBorrowed(_ index: Int32, blob bytes: UnsafeRawBufferPointer) throws {
        let rc =
            if let base = bytes.baseAddress, !bytes.isEmpty {
                sqlite3_bind_blob(handle, index, base, Int32(bytes.count), nil)
            } else {
                sqlite3_bind_zeroblob(handle, index, 0)
            }
        guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
    }

    /// `bindBorrowed(_:blob:)` for UTF-8 text.
    func bindBorrowed(_ index: Int32, text bytes: UnsafeBufferPointer<UInt8>) throws {
        let rc =
            if let base = bytes.baseAddress, !bytes.isEmpty {
                base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text(handle, index, $0, Int32(bytes.count), nil)
                }
            } else {
                couchlite_bind_text(handle, index, "", 0)
            }
        guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
    }

    func bindNull(_ index: Int32) throws {
        let rc = sqlite3_bind_null(handle, index)
        guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
    }

    func bind(_ values: [SQLiteValue]) throws {
        for (offset, value) in values.enumerated() { try bind(value, at: Int32(offset + 1)) }
    }

    func bind(_ value: SQLiteValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .int(let v): rc = sqlite3_bind_int64(handle, index, Int64(v))
        case .text(let v):
            rc =
                v.utf8.withContiguousStorageIfAvailable { buffer in
                    buffer.withMemoryRebound(to: CChar.self) {
                        couchlite_bind_text(handle, index, $0.baseAddress, Int32($0.count))
                    }
                }
                ?? Array(v.utf8).withUnsafeBufferPointer { buffer in
                    buffer.withMemoryRebound(to: CChar.self) {
                        couchlite_bind_text(handle, index, $0.baseAddress, Int32($0.count))
                    }
                }
        case .blob(let v):
            // A zero-length blob must still be a blob, not NULL: bind a non-nil pointer.
            rc =
                v.isEmpty
                ? sqlite3_bind_zeroblob(handle, index, 0)
                : v.withUnsafeBytes { couchlite_bind_blob(handle, index, $0.baseAddress, Int32($0.count)) }
        case .null: rc = sqlite3_bind_null(handle, index)
        }
        guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
    }

    /// Advances; true when a row is available.
    func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(rc, sql: sql)
        }
    }

    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    func optionalInt(_ column: Int32) -> Int? { isNull(column) ? nil : int(column) }

    /// Hands the column's bytes to `body` without copying them (empty for NULL); valid only inside `body`.
    func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        // SQLite's documented order: the pointer first, then its size.
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    func blob(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
