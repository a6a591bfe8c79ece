import Foundation

extension Database {
    /// `GET /db` facts from one committed snapshot.
    public func info() throws -> DatabaseInfo {
        let path = self.path
        let name = self.name
        return try readers.read { connection in
            let meta = try Meta.load(connection)
            let pageSize = try connection.scalarInt("PRAGMA page_size") ?? 0
            let pages = try connection.scalarInt("PRAGMA page_count") ?? 0
            let free = try connection.scalarInt("PRAGMA freelist_count") ?? 0
            let external = try connection.scalarInt("SELECT COALESCE(SUM(LENGTH(body)), 0) FROM revs WHERE is_leaf = 1")
            var fileSize = 0
            for suffix in ["", "-wal"] {
                let attributes = try? FileManager.default.attributesOfItem(atPath: path + suffix)
                fileSize += (attributes?[.size] as? NSNumber)?.intValue ?? 0
            }
            return DatabaseInfo(
                name: name, docCount: meta.docCount, docDelCount: meta.docDelCount, updateSeq: meta.updateSeq,
                purgeSeq: meta.purgeSeq, fileSize: fileSize, activeSize: (pages - free) * pageSize,
                externalSize: external ?? 0, revsLimit: meta.revsLimit)
        }
    }

    /// A document's tree and winner; nil if it never existed (a deleted document is returned, `deleted` true).
    public func document(_ id: String) throws -> DocumentInfo? {
        try readers.read { connection in try Database.documentInfo(id, connection) }
    }

    static func documentInfo(_ id: String, _ connection: SQLiteConnection) throws -> DocumentInfo? {
        guard let doc = try findDoc(id, connection) else { return nil }
        return try documentInfo(id: id, rowid: doc.rowid, seq: doc.seq, connection)
    }

    static func documentInfo(id: String, rowid: Int, seq: Int, _ connection: SQLiteConnection) throws
        -> DocumentInfo?
    {
        let (tree, _) = try loadTree(rowid, connection)
        guard let winner = tree.winner else { return nil }
        return DocumentInfo(
            id: id, seq: seq, winner: winner.rev, deleted: winner.deleted,
            leaves: tree.leaves.map { ($0.rev, $0.deleted) }, tree: tree)
    }

    /// One revision with its body and attachments.
    /// - Parameter rev: the revision; nil for the winner (returned even when deleted).
    /// - Returns: nil when the document or revision is not stored.
    public func revision(_ id: String, rev: RevID?) throws -> StoredRevision? {
        try readers.read { connection in
            guard let doc = try Database.findDoc(id, connection) else { return nil }
            let (tree, rowids) = try Database.loadTree(doc.rowid, connection)
            guard let target = rev ?? tree.winner?.rev, let index = tree.index(of: target) else { return nil }
            let revRowid = rowids[index]
            return try Database.storedRevision(target, rowid: revRowid, tree: tree, connection)
        }
    }

    /// Every leaf with its body, winner first (`open_revs=all`).
    public func leafRevisions(_ id: String) throws -> [StoredRevision] {
        try readers.read { connection in
            guard let doc = try Database.findDoc(id, connection) else { return [] }
            let (tree, rowids) = try Database.loadTree(doc.rowid, connection)
            return try tree.leaves.compactMap { leaf in
                guard let index = tree.index(of: leaf.rev) else { return nil }
                return try Database.storedRevision(leaf.rev, rowid: rowids[index], tree: tree, connection)
            }
        }
    }

    static func storedRevision(_ rev: RevID, rowid: Int, tree: RevTree, _ connection: SQLiteConnection) throws
        -> StoredRevision?
    {
        let statement = try connection.statement(.revisionRow)
        defer { statement.rewind() }
        try statement.bind(1, rowid)
        guard try statement.step() else { return nil }
        let deleted = statement.int(0) != 0
        let body = statement.blob(1)
        let localSeq = statement.int(2)
        let attachments = try connection.statement(.revisionAttachments)
        defer { attachments.rewind() }
        try attachments.bind(1, rowid)
        var infos = [AttachmentInfo]()
        while try attachments.step() { infos.append(attachment(attachments)) }
        return StoredRevision(
            rev: rev, deleted: deleted, body: body, attachments: infos, history: tree.history(of: rev),
            localSeq: localSeq)
    }

    /// `_revs_diff`: for each document, the given revs the database lacks and the leaves that may be their
    /// ancestors (leaves with a lower generation than some missing rev, `couch_db:find_missing`). Documents with
    /// nothing missing are left out.
    public func revsDiff(_ request: [(id: String, revs: [RevID])]) throws
        -> [(id: String, missing: [RevID], possibleAncestors: [RevID])]
    {
        try readers.read { connection in
            // One query per document fetches its leaves; most requested revs are decided from them alone (a
            // stored rev at or above the highest leaf generation is a leaf), the rest by one index probe each.
            let leaves = try connection.statement(.leavesByDocID)
            let exists = try connection.statement(.revExists)
            var out = [(id: String, missing: [RevID], possibleAncestors: [RevID])]()
            var found = [(rev: RevID, deleted: Bool)]()
            for (id, revs) in request {
                found.removeAll(keepingCapacity: true)
                var rowid: Int?
                do {
                    defer { leaves.rewind() }
                    try leaves.bind(1, id)
                    while try leaves.step() {
                        rowid = leaves.int(0)
                        found.append((RevID(pos: leaves.int(1), hash: leaves.text(2)), leaves.int(3) != 0))
                    }
                }
                let highestLeaf = found.lazy.map(\.rev.pos).max() ?? 0
                var missing = [RevID]()
                for rev in Database.distinct(revs) {
                    guard let rowid else {
                        missing.append(rev)
                        continue
                    }
                    if found.contains(where: { $0.rev.pos == rev.pos && $0.rev.hash == rev.hash }) { continue }
                    if rev.pos >= highestLeaf {
                        missing.append(rev)
                        continue
                    }
                    defer { exists.rewind() }
                    try exists.bind(1, rowid)
                    try exists.bind(2, rev.pos)
                    try exists.bind(3, rev.hash)
                    if try !exists.step() { missing.append(rev) }
                }
                guard !missing.isEmpty else { continue }
                var ancestors = [RevID]()
                if rowid != nil, let highest = missing.lazy.map(\.pos).max() {
                    ancestors = found.sorted(by: RevTree.winsOver).map(\.rev).filter { $0.pos < highest }
                }
                out.append((id, missing, ancestors))
            }
            return out
        }
    }

    /// `revs` without repeats, first occurrence kept, in order. Small lists (every real request) are scanned
    /// instead of hashed.
    static func distinct(_ revs: [RevID]) -> [RevID] {
        if revs.count <= 8 {
            var out = [RevID]()
            out.reserveCapacity(revs.count)
            for rev in revs where !out.contains(rev) { out.append(rev) }
            return out
        }
        var seen = Set<RevID>()
        return revs.filter { seen.insert($0).inserted }
    }

    /// `_changes`: one row per document at its latest update, by seq.
    /// - Parameters:
    ///   - since: rows with seq above this (ascending) — with `descending`, still only rows above `since`.
    ///   - limit: most rows, nil for all.
    ///   - body: called per row on the caller's thread; return false to stop.
    public func changes(since: Int, limit: Int?, descending: Bool, _ body: (ChangeRow) throws -> Bool) throws {
        try readers.read { connection in
            // One joined scan (docs by seq, each with its leaves) instead of a leaves query per row; rows of one
            // document are consecutive. `limit` counts documents, so it is applied here, not in SQL.
            let rows = try connection.statement(descending ? .changesDescending : .changesAscending)
            defer { rows.rewind() }
            try rows.bind(1, since)
            let limit = limit.flatMap { $0 < 0 ? nil : $0 }
            var emitted = 0
            var current: ChangeRow?
            func flush() throws -> Bool {
                guard var row = current else { return true }
                current = nil
                if row.leaves.count > 1 { row.leaves.sort(by: RevTree.winsOver) }
                emitted += 1
                return try body(row)
            }
            if limit == 0 { return }
            while try rows.step() {
                let seq = rows.int(0)
                if current?.seq != seq {
                    guard try flush() else { return }
                    if let limit, emitted >= limit { return }
                    current = ChangeRow(
                        seq: seq, id: rows.text(1), deleted: rows.int(2) != 0,
                        winner: RevID(pos: rows.int(3), hash: rows.text(4)), leaves: [])
                }
                current?.leaves.append((RevID(pos: rows.int(5), hash: rows.text(6)), rows.int(7) != 0))
            }
            _ = try flush()
        }
    }

    /// `_all_docs`: live documents ordered by the UTF-8 bytes of their ids.
    /// - Parameters:
    ///   - startKey, endKey: bounds in iteration order (with `descending`, `startKey` is the higher one).
    ///   - inclusiveEnd: whether `endKey` itself is included.
    ///   - body: return false to stop.
    /// Live documents whose ids sort before `key` in the direction of iteration: `_all_docs`'s `offset`. One
    /// indexed count, no trees built.
    public func liveDocumentCount(before key: String, descending: Bool) throws -> Int {
        try readers.read { connection in
            let sql = "SELECT count(*) FROM docs WHERE deleted = 0 AND doc_id \(descending ? ">" : "<") ?"
            let rows = try connection.prepare(sql)
            defer { rows.reset() }
            try rows.bind([.text(key)])
            return try rows.step() ? rows.int(0) : 0
        }
    }

    /// Documents whose latest update is after `seq`: `_changes`'s `pending`. One indexed count.
    public func changeCount(since seq: Int) throws -> Int {
        try readers.read { connection in
            let rows = try connection.prepare("SELECT count(*) FROM docs WHERE seq > ?")
            defer { rows.reset() }
            try rows.bind([.int(seq)])
            return try rows.step() ? rows.int(0) : 0
        }
    }

    public func allDocs(
        startKey: String?, endKey: String?, inclusiveEnd: Bool, descending: Bool, skip: Int, limit: Int?,
        _ body: (DocumentInfo) throws -> Bool
    ) throws {
        try readers.read { connection in
            // Documents joined with all their revision rows in one scan (rows of a document are consecutive), so
            // each tree is built without a query of its own. `skip` and `limit` count documents.
            var sql = """
                SELECT d.doc_rowid, d.doc_id, d.seq, r.rev_rowid, r.pos, r.hash, r.parent, r.deleted,
                  r.body IS NOT NULL
                FROM docs d JOIN revs r ON r.doc_rowid = d.doc_rowid WHERE d.deleted = 0
                """
            var bindings = [SQLiteValue]()
            if let startKey {
                sql += descending ? " AND d.doc_id <= ?" : " AND d.doc_id >= ?"
                bindings.append(.text(startKey))
            }
            if let endKey {
                sql +=
                    descending
                    ? (inclusiveEnd ? " AND d.doc_id >= ?" : " AND d.doc_id > ?")
                    : (inclusiveEnd ? " AND d.doc_id <= ?" : " AND d.doc_id < ?")
                bindings.append(.text(endKey))
            }
            sql += " ORDER BY d.doc_id \(descending ? "DESC" : "ASC")"
            let rows = try connection.prepare(sql)
            defer { rows.reset() }
            try rows.bind(bindings)
            let limit = limit.flatMap { $0 < 0 ? nil : $0 }
            var toSkip = max(0, skip)
            var emitted = 0
            var doc: (rowid: Int, id: String, seq: Int)?
            var revs = [RevTree.StoredRow]()
            func flush() throws -> Bool {
                guard let current = doc else { return true }
                doc = nil
                if toSkip > 0 {
                    toSkip -= 1
                    return true
                }
                let tree = RevTree(stored: revs)
                guard let winner = tree.winner else { return true }
                emitted += 1
                return try body(
                    DocumentInfo(
                        id: current.id, seq: current.seq, winner: winner.rev, deleted: winner.deleted,
                        leaves: tree.leaves.map { ($0.rev, $0.deleted) }, tree: tree))
            }
            if limit == 0 { return }
            while try rows.step() {
                let rowid = rows.int(0)
                if doc?.rowid != rowid {
                    guard try flush() else { return }
                    if let limit, emitted >= limit { return }
                    doc = (rowid, rows.text(1), rows.int(2))
                    revs.removeAll(keepingCapacity: true)
                }
                revs.append(
                    RevTree.StoredRow(
                        rowid: rows.int(3), rev: RevID(pos: rows.int(4), hash: rows.text(5)),
                        parent: rows.optionalInt(6),
                        deleted: rows.int(7) != 0, hasBody: rows.int(8) != 0))
            }
            _ = try flush()
        }
    }

    /// A `_local` document: its `N` and body.
    public func localDocument(_ id: String) throws -> (rev: Int, body: [UInt8])? {
        try readers.read { connection in
            let statement = try connection.statement(.localDocument)
            defer { statement.rewind() }
            try statement.bind(1, id)
            guard try statement.step() else { return nil }
            return (statement.int(0), statement.blob(1) ?? [])
        }
    }

    /// Blob keys referenced by any stored revision.
    public func referencedBlobKeys() throws -> Set<String> {
        try readers.read { try Database.blobKeys($0) }
    }
}
