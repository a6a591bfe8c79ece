import Foundation
import Synchronization

/// One emitted row on its way into a view index: which view of the design document, the key's collation
/// bytes (compared with `memcmp`: SQLite's BLOB order), and the key and value as JSON text. The store knows
/// nothing of JSON or collation; `CouchQuery.ViewCollation` makes `sortKey`.
public struct ViewEmit: Sendable {
    public var view: Int
    public var sortKey: [UInt8]
    public var key: [UInt8]
    public var value: [UInt8]

    public init(view: Int, sortKey: [UInt8], key: [UInt8], value: [UInt8]) {
        self.view = view
        self.sortKey = sortKey
        self.key = key
        self.value = value
    }
}

/// A row read back: rows of one view are in (`sortKey`, `docID`, emit order) order, CouchDB's.
public struct ViewRow: Sendable {
    public var sortKey: [UInt8]
    public var docID: String
    /// The row's position among its document's emits (ties of one key in one document keep emit order).
    public var index: Int
    public var key: [UInt8]
    public var value: [UInt8]
}

extension ViewRow {
    /// The row a statement selecting `sortkey, docid, n, key, value` (in that order) is on.
    init(selected statement: SQLiteStatement) {
        self.init(
            sortKey: statement.blob(0) ?? [], docID: statement.text(1), index: statement.int(2),
            key: statement.blob(3) ?? [], value: statement.blob(4) ?? [])
    }
}

/// One end of a key range: rows from/to (`sortKey`, `docID`); without `docID` the bound covers every row of
/// the key (inclusive) or none of them (exclusive).
public struct ViewBound: Sendable {
    public var sortKey: [UInt8]
    public var docID: String?
    public var inclusive: Bool

    public init(sortKey: [UInt8], docID: String?, inclusive: Bool) {
        self.sortKey = sortKey
        self.docID = docID
        self.inclusive = inclusive
    }
}

/// What a scan reads: one view's rows between two bounds (in key order; `descending` reads from `high` down).
public struct ViewScan: Sendable {
    public var view: Int
    public var low: ViewBound?
    public var high: ViewBound?
    public var descending: Bool

    public init(view: Int, low: ViewBound?, high: ViewBound?, descending: Bool) {
        self.view = view
        self.low = low
        self.high = high
        self.descending = descending
    }
}

/// A design document's view index: one SQLite file per (database, signature), as CouchDB keeps one `.view`
/// file per signature. It remembers the database sequence it has seen (`updateSeq`) so each update maps only the
/// documents changed since; rows of every view of the design document live in one table keyed by (view,
/// collation bytes, doc id, emit index), and a per-document index lets a changed or deleted document's old rows
/// be removed.
///
/// Writes come from one updater at a time (the caller serializes them); reads use their own connections and see
/// committed state only (WAL).
public final class ViewIndexFile: Sendable {
    public let path: String
    private let writer: Mutex<SQLiteConnection>
    private let readers = Mutex<[SQLiteConnection]>([])
    private let state: Mutex<(updateSeq: Int, purgeSeq: Int, chunksValid: Bool, closed: Bool)>

    /// The on-disk format (`PRAGMA user_version`). 2 added the chunk table of stored partial reductions: a file of
    /// another version (1 had none, as `user_version` 0) is emptied and rebuilt, never read with the wrong layout.
    static let formatVersion = 2

    private static let schema = """
        CREATE TABLE IF NOT EXISTS meta (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          owner TEXT NOT NULL,
          update_seq INTEGER NOT NULL,
          purge_seq INTEGER NOT NULL,
          chunks_valid INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE IF NOT EXISTS view_counts (view INTEGER PRIMARY KEY, rows INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS rows (
          view INTEGER NOT NULL,
          sortkey BLOB NOT NULL,
          docid TEXT NOT NULL,
          n INTEGER NOT NULL,
          key BLOB NOT NULL,
          value BLOB NOT NULL,
          PRIMARY KEY (view, sortkey, docid, n)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS rows_by_doc ON rows (docid);
        CREATE TABLE IF NOT EXISTS chunks (
          view INTEGER NOT NULL,
          sortkey BLOB NOT NULL,
          docid TEXT NOT NULL,
          n INTEGER NOT NULL,
          rows INTEGER NOT NULL,
          first_sortkey BLOB,
          first_docid TEXT,
          first_n INTEGER,
          first_key BLOB,
          last_sortkey BLOB,
          last_docid TEXT,
          last_key BLOB,
          partial BLOB,
          PRIMARY KEY (view, sortkey, docid, n)
        ) WITHOUT ROWID;
        """

    /// Opens or creates the index at `path` for the database identified by `owner` (its uuid): a file left by an
    /// earlier database of the same name is emptied, never reused.
    public init(path: String, owner: String) throws {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let connection = try SQLiteConnection(path: path, readOnly: false, create: true)
        try connection.setPragma("journal_mode", "WAL")
        // An index can always be rebuilt from its database: commits need not wait for the disk.
        try connection.setPragma("synchronous", "OFF", expected: "0")
        try connection.setPragma("temp_store", "MEMORY", expected: "2")
        try connection.setPragma("cache_size", "-8192")
        if try connection.scalarInt("PRAGMA user_version") != ViewIndexFile.formatVersion {
            try connection.inTransaction(.immediate) {
                try connection.execute(
                    "DROP TABLE IF EXISTS rows; DROP TABLE IF EXISTS view_counts; DROP TABLE IF EXISTS meta; "
                        + "DROP TABLE IF EXISTS chunks")
                try connection.execute(ViewIndexFile.schema)
                try connection.setPragma("user_version", "\(ViewIndexFile.formatVersion)")
            }
        }
        try connection.execute(ViewIndexFile.schema)
        let stored = try connection.prepare(
            "SELECT owner, update_seq, purge_seq, chunks_valid FROM meta WHERE id = 1")
        var seqs = (0, 0, false)
        if try stored.step(), stored.text(0) == owner {
            seqs = (stored.int(1), stored.int(2), stored.int(3) != 0)
            stored.reset()
        } else {
            stored.reset()
            try connection.inTransaction(.immediate) {
                try connection.execute(
                    "DELETE FROM rows; DELETE FROM view_counts; DELETE FROM meta; DELETE FROM chunks")
                try connection.run(
                    "INSERT INTO meta (id, owner, update_seq, purge_seq) VALUES (1, ?, 0, 0)", [.text(owner)])
            }
        }
        writer = Mutex(connection)
        state = Mutex((seqs.0, seqs.1, seqs.2, false))
    }

    /// The database sequence every row reflects.
    public var updateSeq: Int { state.withLock { $0.updateSeq } }

    public var purgeSeq: Int { state.withLock { $0.purgeSeq } }

    /// Whether the chunk table holds the stored partial reductions of the current rows (false after a build from
    /// scratch until ``rebuildChunks(_:)``, and after any `apply` without a reducer).
    public var chunksValid: Bool { state.withLock { $0.chunksValid } }

    /// Replaces the rows of each document in `documents` (no emits: the document is gone from the views) and
    /// records `seq`, in one transaction. A document marked `fresh` is known to have no rows yet (a first build):
    /// its removal query is skipped.
    ///
    /// With `chunks` (and valid chunks), the chunks the changed rows fall in are refolded in the same transaction;
    /// without, the chunk table is marked stale (a build from scratch refolds it once at the end instead).
    public func apply(
        _ documents: [(docID: String, emits: [ViewEmit], fresh: Bool)], seq: Int, chunks: (any ViewChunkReducer)? = nil
    ) throws {
        let maintain = chunks != nil && chunksValid
        try writer.withLock { connection in
            try connection.inTransaction(.immediate) {
                var counts: [Int: Int] = [:]
                var changed = ChangedRows()
                let removed = try connection.prepare("SELECT view, sortkey, n FROM rows WHERE docid = ?")
                let remove = try connection.prepare("DELETE FROM rows WHERE docid = ?")
                let insert = try connection.prepare(
                    "INSERT OR REPLACE INTO rows (view, sortkey, docid, n, key, value) VALUES (?, ?, ?, ?, ?, ?)")
                for (docID, emits, fresh) in documents {
                    if !fresh {
                        try removed.bind(1, docID)
                        while try removed.step() {
                            let view = removed.int(0)
                            counts[view, default: 0] -= 1
                            if maintain {
                                changed.deleted[view, default: []].insert(
                                    ViewRowKey(sortKey: removed.blob(1) ?? [], docID: docID, n: removed.int(2)))
                            }
                        }
                        removed.reset()
                        try remove.bind(1, docID)
                        while try remove.step() {}
                        remove.reset()
                    }
                    for (n, emit) in emits.enumerated() {
                        if maintain {
                            changed.inserted[emit.view, default: []].insert(
                                ViewRowKey(sortKey: emit.sortKey, docID: docID, n: n))
                        }
                        try insert.bind(1, emit.view)
                        try insert.bind(2, blob: emit.sortKey)
                        try insert.bind(3, docID)
                        try insert.bind(4, n)
                        try insert.bind(5, blob: emit.key)
                        try insert.bind(6, blob: emit.value)
                        while try insert.step() {}
                        insert.reset()
                        counts[emit.view, default: 0] += 1
                    }
                }
                for (view, delta) in counts where delta != 0 {
                    try connection.run(
                        "INSERT INTO view_counts (view, rows) VALUES (?, ?) "
                            + "ON CONFLICT (view) DO UPDATE SET rows = rows + excluded.rows", [.int(view), .int(delta)])
                }
                if maintain, let chunks {
                    try ViewIndexFile.refold(connection, changed, chunks)
                } else {
                    try connection.run("UPDATE meta SET chunks_valid = 0 WHERE id = 1")
                }
                try connection.run("UPDATE meta SET update_seq = ? WHERE id = 1", [.int(seq)])
            }
        }
        state.withLock {
            $0.updateSeq = seq
            $0.chunksValid = maintain
        }
    }

    /// Publishes what `ViewIndexFile+Purge` wrote: the purge seq and, for an emptied index, sequence 0.
    func updatePublished(purgeSeq: Int, emptied: Bool) {
        state.withLock {
            $0.purgeSeq = purgeSeq
            if emptied { $0.updateSeq = 0 }
        }
    }

    /// Runs `body` in a write transaction on the writer connection, then sets `chunksValid` to what it returns.
    func write(_ body: (SQLiteConnection) throws -> Bool) throws {
        let valid = try writer.withLock { connection in
            try connection.inTransaction(.immediate) { try body(connection) }
        }
        state.withLock { $0.chunksValid = valid }
    }

    /// Rows in `view` (CouchDB's `total_rows`).
    public func rowCount(view: Int) throws -> Int {
        try read { try $0.scalarInt("SELECT rows FROM view_counts WHERE view = ?", [.int(view)]) ?? 0 }
    }

    /// Rows of `scan.view` that sort before the scan's first row, in its direction (CouchDB's `offset`).
    public func rowsBefore(_ scan: ViewScan) throws -> Int {
        let total = try rowCount(view: scan.view)
        let inRangeOrAfter: Int
        if scan.descending {
            guard let high = scan.high else { return 0 }
            var clause = ""
            var bindings: [SQLiteValue] = [.int(scan.view)]
            ViewIndexFile.upper(high, &clause, &bindings)
            inRangeOrAfter = try read {
                try $0.scalarInt("SELECT COUNT(*) FROM rows WHERE view = ?" + clause, bindings) ?? 0
            }
        } else {
            guard let low = scan.low else { return 0 }
            var clause = ""
            var bindings: [SQLiteValue] = [.int(scan.view)]
            ViewIndexFile.lower(low, &clause, &bindings)
            inRangeOrAfter = try read {
                try $0.scalarInt("SELECT COUNT(*) FROM rows WHERE view = ?" + clause, bindings) ?? 0
            }
        }
        return total - inRangeOrAfter
    }

    /// Calls `body` with up to `limit` rows of `scan` after `cursor` (the last row of the previous page), in the
    /// scan's direction; stops early when `body` returns false. Read one page at a time: rows are handed over
    /// inside the read transaction, so `body` must not read from this file again.
    public func rows(
        _ scan: ViewScan, after cursor: ViewRow?, limit: Int, _ body: (ViewRow) throws -> Bool
    ) throws {
        var sql = "SELECT sortkey, docid, n, key, value FROM rows WHERE view = ?"
        var bindings: [SQLiteValue] = [.int(scan.view)]
        if let low = scan.low { ViewIndexFile.lower(low, &sql, &bindings) }
        if let high = scan.high { ViewIndexFile.upper(high, &sql, &bindings) }
        if let cursor {
            sql += scan.descending ? " AND (sortkey, docid, n) < (?, ?, ?)" : " AND (sortkey, docid, n) > (?, ?, ?)"
            bindings += [.blob(cursor.sortKey), .text(cursor.docID), .int(cursor.index)]
        }
        let order = scan.descending ? "DESC" : "ASC"
        sql += " ORDER BY sortkey \(order), docid \(order), n \(order) LIMIT ?"
        bindings.append(.int(limit))
        try read { connection in
            let statement = try connection.prepare(sql)
            defer { statement.reset() }
            try statement.bind(bindings)
            while try statement.step() {
                guard try body(ViewRow(selected: statement)) else { return }
            }
        }
    }

    /// Bytes of the file and its WAL (`sizes.file`), and of the rows' keys and values (`sizes.external`).
    public func sizes() throws -> (file: Int, external: Int) {
        let files = ["", "-wal"].reduce(0) { total, suffix in
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + suffix)
            return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
        }
        let external = try read {
            try $0.scalarInt("SELECT COALESCE(SUM(LENGTH(key) + LENGTH(value)), 0) FROM rows") ?? 0
        }
        return (files, external)
    }

    /// Closes every connection; later calls fail.
    public func close() {
        state.withLock { $0.closed = true }
        let idle = readers.withLock { readers in
            defer { readers.removeAll() }
            return readers
        }
        for connection in idle { connection.close() }
        writer.withLock { $0.close() }
    }

    static func lower(_ bound: ViewBound, _ sql: inout String, _ bindings: inout [SQLiteValue]) {
        switch (bound.docID, bound.inclusive) {
        case (nil, true): sql += " AND sortkey >= ?"
        case (nil, false): sql += " AND sortkey > ?"
        case (.some, true): sql += " AND (sortkey, docid) >= (?, ?)"
        case (.some, false): sql += " AND (sortkey, docid) > (?, ?)"
        }
        bindings.append(.blob(bound.sortKey))
        if let docID = bound.docID { bindings.append(.text(docID)) }
    }

    static func upper(_ bound: ViewBound, _ sql: inout String, _ bindings: inout [SQLiteValue]) {
        switch (bound.docID, bound.inclusive) {
        case (nil, true): sql += " AND sortkey <= ?"
        case (nil, false): sql += " AND sortkey < ?"
        case (.some, true): sql += " AND (sortkey, docid) <= (?, ?)"
        case (.some, false): sql += " AND (sortkey, docid) < (?, ?)"
        }
        bindings.append(.blob(bound.sortKey))
        if let docID = bound.docID { bindings.append(.text(docID)) }
    }

    /// Runs `body` in a read transaction (`SQLiteConnection.reading`) on a connection nobody else uses, which goes
    /// back to the pool only once its `BEGIN` succeeded.
    func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        guard !state.withLock({ $0.closed }) else { throw StoreError.dbNotFound }
        let connection = try readers.withLock { $0.popLast() } ?? openReader()
        var began = false
        defer {
            if began {
                readers.withLock { readers in
                    if readers.count < 4 { readers.append(connection) } else { connection.close() }
                }
            }
        }
        return try connection.reading { connection in
            began = true
            return try body(connection)
        }
    }

    private func openReader() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, readOnly: false, create: false)
        try connection.setPragma("query_only", "1")
        return connection
    }
}
