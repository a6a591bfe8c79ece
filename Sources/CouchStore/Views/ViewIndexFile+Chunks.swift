/// Stored partial reductions, so a reduce over a range costs about one step per chunk plus the rows of the two
/// chunks at its edges instead of a pass over every row (CouchDB keeps its reductions in the B-tree's inner
/// nodes; SQLite's B-tree does not let us, so they live beside it).
///
/// The rows of each reduce view are cut into content-defined chunks in key order: a row ends a chunk when a hash of
/// its (sort key, doc id, emit index) falls under 1/``ViewIndexFile/chunkSpan``, so which rows end chunks depends
/// only on the rows themselves, never on the order they were written in. An insert or a deletion changes the one
/// chunk it falls in (and merges or splits it with its neighbour when the row itself ends a chunk); nothing else
/// moves. The rows after the view's last boundary form its tail chunk, keyed past every real row. Each chunk row
/// holds the chunk's first and last row, its row count and the partial reduction a ``ViewChunkReducer`` made of
/// its rows (nil when there is none: its rows are then folded at query time, which is always correct).
///
/// The store knows nothing of JSON or reduce functions: partials are opaque bytes from the reducer.
public protocol ViewChunkReducer: AnyObject {
    /// The views whose chunks keep partial reductions (those with a reduce function).
    var views: [Int] { get }

    /// A fresh fold for one chunk of `view`.
    func fold(view: Int) -> any ViewChunkFold
}

/// The fold of one chunk's rows, fed in key order.
public protocol ViewChunkFold: AnyObject {
    func add(_ row: ViewRow)

    /// The partial reduction, or nil when the chunk keeps none (a row the reducer refused, a failing function).
    func finish() -> [UInt8]?
}

/// A chunk handed to a fold instead of its rows: every row of it lies inside the scan.
public struct ViewChunk: Sendable {
    public var firstSortKey: [UInt8]
    public var firstKey: [UInt8]
    public var lastSortKey: [UInt8]
    public var lastKey: [UInt8]
    public var rows: Int
    public var partial: [UInt8]
}

/// What ``ViewIndexFile/fold(_:_:)`` hands over, in the scan's order: single rows, or whole chunks.
public enum ViewFoldItem {
    case row(ViewRow)
    case chunk(ViewChunk)
}

/// What the fold's body answers for an item: go on, give me this chunk's rows one by one instead (ignored for a
/// row), or stop.
public enum ViewFoldStep {
    case next
    case expand
    case stop
}

/// A row's place in its view: (sort key, doc id, emit index), compared as SQLite compares the primary key.
struct ViewRowKey: Hashable, Comparable {
    var sortKey: [UInt8]
    var docID: String
    var n: Int

    /// The key of each view's tail chunk: after every real row (sort keys start with a type tag from 1 to 7).
    static let tail = ViewRowKey(sortKey: [0xFF], docID: "", n: 0)

    static func < (lhs: ViewRowKey, rhs: ViewRowKey) -> Bool {
        if lhs.sortKey != rhs.sortKey { return lhs.sortKey.lexicographicallyPrecedes(rhs.sortKey) }
        if lhs.docID != rhs.docID { return lhs.docID.utf8.lexicographicallyPrecedes(rhs.docID.utf8) }
        return lhs.n < rhs.n
    }

    /// Whether the row ends a chunk: FNV-1a over the key, a 64-bit finalizer, under 1/`chunkSpan`. Fixed
    /// constants (never Swift's per-process seeded `Hasher`): the answer must be the same in every run.
    var endsChunk: Bool {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            h ^= UInt64(byte)
            h = h &* 0x100_0000_01b3
        }
        for byte in sortKey { mix(byte) }
        mix(0xFF)
        for byte in docID.utf8 { mix(byte) }
        mix(0xFF)
        var index = UInt64(bitPattern: Int64(n))
        for _ in 0..<8 {
            mix(UInt8(truncatingIfNeeded: index))
            index >>= 8
        }
        h ^= h >> 30
        h = h &* 0xbf58_476d_1ce4_e5b9
        h ^= h >> 27
        h = h &* 0x94d0_49bb_1331_11eb
        h ^= h >> 31
        return h % UInt64(ViewIndexFile.chunkSpan) == 0
    }

    var bindings: [SQLiteValue] { [.blob(sortKey), .text(docID), .int(n)] }
}

/// The rows one `apply` removed and inserted, per view.
struct ChangedRows {
    var deleted: [Int: Set<ViewRowKey>] = [:]
    var inserted: [Int: Set<ViewRowKey>] = [:]
}

extension ViewIndexFile {
    /// Rows per chunk on average.
    public static let chunkSpan = 64

    /// Refolds every chunk of `reducer.views` from the rows, in one transaction, and marks the chunks valid: after a
    /// build from scratch (one pass over the rows, cheaper than keeping chunks up to date row by row while every
    /// batch lands all over the key space).
    public func rebuildChunks(_ reducer: any ViewChunkReducer) throws {
        try write { connection in
            try connection.execute("DELETE FROM chunks")
            for view in reducer.views {
                let rows = try connection.prepare(
                    "SELECT sortkey, docid, n, key, value FROM rows WHERE view = ? ORDER BY sortkey, docid, n")
                defer { rows.reset() }
                try rows.bind(1, view)
                var chunk = ChunkBuilder(fold: reducer.fold(view: view))
                while try rows.step() {
                    let row = ViewRow(selected: rows)
                    chunk.add(row)
                    let key = ViewRowKey(sortKey: row.sortKey, docID: row.docID, n: row.index)
                    if key.endsChunk {
                        try chunk.store(connection, view: view, key: key)
                        chunk = ChunkBuilder(fold: reducer.fold(view: view))
                    }
                }
                try chunk.store(connection, view: view, key: .tail)
            }
            try connection.run("UPDATE meta SET chunks_valid = 1 WHERE id = 1")
            return true
        }
    }

    /// Brings the chunks the `changed` rows fall in up to date (inside `apply`'s transaction, after its row writes).
    static func refold(_ connection: SQLiteConnection, _ changed: ChangedRows, _ reducer: any ViewChunkReducer) throws {
        for view in reducer.views {
            let deleted = changed.deleted[view] ?? []
            let inserted = changed.inserted[view] ?? []
            guard !deleted.isEmpty || !inserted.isEmpty else { continue }
            // First make the chunk keys the boundaries of the new rows: a boundary row that left takes its chunk
            // with it (its rows join the next chunk), a new one starts a chunk (its rows leave the next one).
            try connection.run(
                "INSERT OR IGNORE INTO chunks (view, sortkey, docid, n, rows) VALUES (?, ?, ?, ?, 0)",
                [.int(view)] + ViewRowKey.tail.bindings)
            for row in deleted where row.endsChunk && !inserted.contains(row) {
                try connection.run(
                    "DELETE FROM chunks WHERE view = ? AND sortkey = ? AND docid = ? AND n = ?",
                    [.int(view)] + row.bindings)
            }
            for row in inserted where row.endsChunk && !deleted.contains(row) {
                try connection.run(
                    "INSERT OR IGNORE INTO chunks (view, sortkey, docid, n, rows) VALUES (?, ?, ?, ?, 0)",
                    [.int(view)] + row.bindings)
            }
            // Then refold each chunk holding (or having held) a changed row, and the one after a new boundary.
            var stale = Set<ViewRowKey>()
            for row in deleted.union(inserted) {
                if let key = try chunkKey(connection, view: view, from: row, inclusive: true) { stale.insert(key) }
                if row.endsChunk, inserted.contains(row),
                    let next = try chunkKey(connection, view: view, from: row, inclusive: false)
                {
                    stale.insert(next)
                }
            }
            for key in stale { try refoldChunk(connection, view: view, key: key, reducer) }
        }
    }

    /// The key of the first chunk ending at or after `row` (after it, with `inclusive` false).
    private static func chunkKey(_ connection: SQLiteConnection, view: Int, from row: ViewRowKey, inclusive: Bool)
        throws -> ViewRowKey?
    {
        let statement = try connection.prepare(
            "SELECT sortkey, docid, n FROM chunks WHERE view = ? AND (sortkey, docid, n) "
                + (inclusive ? ">=" : ">") + " (?, ?, ?) ORDER BY sortkey, docid, n LIMIT 1")
        defer { statement.reset() }
        try statement.bind([.int(view)] + row.bindings)
        guard try statement.step() else { return nil }
        return ViewRowKey(sortKey: statement.blob(0) ?? [], docID: statement.text(1), n: statement.int(2))
    }

    /// Refolds the chunk ending at `key`: its rows are those after the previous chunk's key, up to `key`.
    private static func refoldChunk(
        _ connection: SQLiteConnection, view: Int, key: ViewRowKey, _ reducer: any ViewChunkReducer
    ) throws {
        let previous = try connection.prepare(
            "SELECT sortkey, docid, n FROM chunks WHERE view = ? AND (sortkey, docid, n) < (?, ?, ?) "
                + "ORDER BY sortkey DESC, docid DESC, n DESC LIMIT 1")
        try previous.bind([.int(view)] + key.bindings)
        let start =
            try previous.step()
            ? ViewRowKey(sortKey: previous.blob(0) ?? [], docID: previous.text(1), n: previous.int(2)) : nil
        previous.reset()
        var sql = "SELECT sortkey, docid, n, key, value FROM rows WHERE view = ? AND (sortkey, docid, n) <= (?, ?, ?)"
        var bindings: [SQLiteValue] = [.int(view)] + key.bindings
        if let start {
            sql += " AND (sortkey, docid, n) > (?, ?, ?)"
            bindings += start.bindings
        }
        let rows = try connection.prepare(sql + " ORDER BY sortkey, docid, n")
        defer { rows.reset() }
        try rows.bind(bindings)
        var chunk = ChunkBuilder(fold: reducer.fold(view: view))
        while try rows.step() {
            chunk.add(ViewRow(selected: rows))
        }
        try chunk.store(connection, view: view, key: key)
    }

    /// Calls `body` with the rows of `scan` in its order, handing over instead each chunk that lies wholly inside
    /// the scan and has a partial reduction (the body may ask for its rows instead: `.expand`). Without valid
    /// chunks for the view every row is handed over. One read transaction: `body` must not read this file.
    public func fold(_ scan: ViewScan, _ body: (ViewFoldItem) throws -> ViewFoldStep) throws {
        try read { connection in
            let valid =
                try connection.scalarInt(
                    "SELECT chunks_valid FROM meta WHERE id = 1 AND EXISTS (SELECT 1 FROM chunks WHERE view = ? "
                        + "AND sortkey = ? AND docid = ? AND n = ?)", [.int(scan.view)] + ViewRowKey.tail.bindings)
            guard valid == 1 else {
                _ = try ViewIndexFile.foldRows(connection, scan, after: nil, through: nil, body)
                return
            }
            let chunks = try ViewIndexFile.chunks(connection, scan)
            let order = scan.descending ? Array(chunks.indices.reversed()) : Array(chunks.indices)
            for position in order {
                let entry = chunks[position]
                guard entry.rows > 0 else { continue }
                let start = position > 0 ? chunks[position - 1].key : nil
                if let summary = entry.summary, ViewIndexFile.inside(entry, scan) {
                    switch try body(.chunk(summary)) {
                    case .next: continue
                    case .stop: return
                    case .expand: break
                    }
                }
                guard try ViewIndexFile.foldRows(connection, scan, after: start, through: entry.key, body) else {
                    return
                }
            }
        }
    }

    /// One chunk row as a fold reads it.
    private struct ChunkEntry {
        var key: ViewRowKey
        var rows: Int
        var first: (sortKey: [UInt8], docID: String)
        var last: (sortKey: [UInt8], docID: String)
        var summary: ViewChunk?
    }

    /// The chunks `scan` overlaps, in key order: from the first whose last row is not below the scan, to the first
    /// whose last row is past it.
    private static func chunks(_ connection: SQLiteConnection, _ scan: ViewScan) throws -> [ChunkEntry] {
        var sql =
            "SELECT sortkey, docid, n, rows, first_sortkey, first_docid, first_key, last_sortkey, last_docid, "
            + "last_key, partial FROM chunks WHERE view = ?"
        var bindings: [SQLiteValue] = [.int(scan.view)]
        if let low = scan.low { lower(low, &sql, &bindings) }
        let statement = try connection.prepare(sql + " ORDER BY sortkey, docid, n")
        defer { statement.reset() }
        try statement.bind(bindings)
        var out: [ChunkEntry] = []
        while try statement.step() {
            let key = ViewRowKey(sortKey: statement.blob(0) ?? [], docID: statement.text(1), n: statement.int(2))
            let rows = statement.int(3)
            let first = (statement.blob(4) ?? [], statement.optionalText(5) ?? "")
            let last = (statement.blob(7) ?? [], statement.optionalText(8) ?? "")
            let summary = statement.blob(10).map { partial in
                ViewChunk(
                    firstSortKey: first.0, firstKey: statement.blob(6) ?? [], lastSortKey: last.0,
                    lastKey: statement.blob(9) ?? [], rows: rows, partial: partial)
            }
            out.append(ChunkEntry(key: key, rows: rows, first: first, last: last, summary: summary))
            if rows > 0, let high = scan.high, !satisfies(upper: high, last.0, last.1) { break }
        }
        return out
    }

    private static func inside(_ entry: ChunkEntry, _ scan: ViewScan) -> Bool {
        if let low = scan.low, !satisfies(lower: low, entry.first.sortKey, entry.first.docID) { return false }
        if let high = scan.high, !satisfies(upper: high, entry.last.sortKey, entry.last.docID) { return false }
        return true
    }

    private static func compare(_ sortKey: [UInt8], _ docID: String, _ bound: ViewBound) -> Int {
        if sortKey != bound.sortKey { return sortKey.lexicographicallyPrecedes(bound.sortKey) ? -1 : 1 }
        guard let boundID = bound.docID else { return 0 }
        if docID == boundID { return 0 }
        return docID.utf8.lexicographicallyPrecedes(boundID.utf8) ? -1 : 1
    }

    /// Whether a row at (`sortKey`, `docID`) passes `bound` as a lower bound (the SQL of `lower`).
    static func satisfies(lower bound: ViewBound, _ sortKey: [UInt8], _ docID: String) -> Bool {
        let order = compare(sortKey, docID, bound)
        return bound.inclusive ? order >= 0 : order > 0
    }

    /// Whether a row at (`sortKey`, `docID`) passes `bound` as an upper bound (the SQL of `upper`).
    static func satisfies(upper bound: ViewBound, _ sortKey: [UInt8], _ docID: String) -> Bool {
        let order = compare(sortKey, docID, bound)
        return bound.inclusive ? order <= 0 : order < 0
    }

    /// Hands over the rows of `scan` after `start` and up to `end` (either open), in the scan's order; false when
    /// the body stopped.
    private static func foldRows(
        _ connection: SQLiteConnection, _ scan: ViewScan, after start: ViewRowKey?, through end: ViewRowKey?,
        _ body: (ViewFoldItem) throws -> ViewFoldStep
    ) throws -> Bool {
        var sql = "SELECT sortkey, docid, n, key, value FROM rows WHERE view = ?"
        var bindings: [SQLiteValue] = [.int(scan.view)]
        if let low = scan.low { lower(low, &sql, &bindings) }
        if let high = scan.high { upper(high, &sql, &bindings) }
        if let start {
            sql += " AND (sortkey, docid, n) > (?, ?, ?)"
            bindings += start.bindings
        }
        if let end {
            sql += " AND (sortkey, docid, n) <= (?, ?, ?)"
            bindings += end.bindings
        }
        let order = scan.descending ? "DESC" : "ASC"
        let statement = try connection.prepare(sql + " ORDER BY sortkey \(order), docid \(order), n \(order)")
        defer { statement.reset() }
        try statement.bind(bindings)
        while try statement.step() {
            if try body(.row(ViewRow(selected: statement))) == .stop { return false }
        }
        return true
    }
}

/// One chunk being folded: its first and last rows, count and the reducer's fold.
private struct ChunkBuilder {
    let fold: any ViewChunkFold
    var first: ViewRow?
    var last: ViewRow?
    var rows = 0

    mutating func add(_ row: ViewRow) {
        if first == nil { first = row }
        last = row
        rows += 1
        fold.add(row)
    }

    func store(_ connection: SQLiteConnection, view: Int, key: ViewRowKey) throws {
        var values: [SQLiteValue] = [.int(view)] + key.bindings
        values.append(.int(rows))
        if let first {
            values += [.blob(first.sortKey), .text(first.docID), .int(first.index), .blob(first.key)]
        } else {
            values += [.null, .null, .null, .null]
        }
        if let last {
            values += [.blob(last.sortKey), .text(last.docID), .blob(last.key)]
        } else {
            values += [.null, .null, .null]
        }
        values.append(fold.finish().map { SQLiteValue.blob($0) } ?? .null)
        try connection.run(
            "INSERT OR REPLACE INTO chunks (view, sortkey, docid, n, rows, first_sortkey, first_docid, first_n, "
                + "first_key, last_sortkey, last_docid, last_key, partial) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            values)
    }
}
