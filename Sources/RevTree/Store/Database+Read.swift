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
            let doc = try connection.prepare("SELECT doc_rowid FROM docs WHERE doc_id = ?")
            let exists = try connection.prepare("SELECT 1 FROM revs WHERE doc_rowid = ? AND pos = ? AND hash = ?")
            let leaves = try connection.prepare(
                "SELECT pos, hash, deleted FROM revs WHERE doc_rowid = ? AND is_leaf = 1")
            var out = [(id: String, missing: [RevID], possibleAncestors: [RevID])]()
            for (id, revs) in request {
                try doc.bind([.text(id)])
                let rowid = try doc.step() ? doc.int(0) : nil
                doc.reset()
                var seen = Set<RevID>()
                var missing = [RevID]()
                for rev in revs where seen.insert(rev).inserted {
                    guard let rowid else {
                        missing.append(rev)
                        continue
                    }
                    try exists.bind([.int(rowid), .int(rev.pos), .text(rev.hash)])
                    if try !exists.step() { missing.append(rev) }
                    exists.reset()
                }
                guard !missing.isEmpty else { continue }
                var ancestors = [RevID]()
                if let rowid, let highest = missing.map(\.pos).max() {
                    try leaves.bind([.int(rowid)])
                    var found = [(rev: RevID, deleted: Bool)]()
                    while try leaves.step() {
                        found.append((RevID(pos: leaves.int(0), hash: leaves.text(1)), leaves.int(2) != 0))
                    }
                    leaves.reset()
                    ancestors = found.sorted(by: RevTree.winsOver).map(\.rev).filter { $0.pos < highest }
                }
                out.append((id, missing, ancestors))
            }
            return out
        }
    }

    /// `_changes`: one row per document at its latest update, by seq.
    /// - Parameters:
    ///   - since: rows with seq above this (ascending) — with `descending`, still only rows above `since`.
    ///   - limit: most rows, nil for all.
    ///   - body: called per row on the caller's thread; return false to stop.
    public func changes(since: Int, limit: Int?, descending: Bool, _ body: (ChangeRow) throws -> Bool) throws {
        try readers.read { connection in
            let sql = "SELECT seq, doc_rowid, doc_id, deleted, winner_pos, winner_hash FROM docs WHERE seq > ? "
                + "ORDER BY seq \(descending ? "DESC" : "ASC") LIMIT ?"
            let rows = try connection.prepare(sql)
            defer { rows.reset() }
            try rows.bind([.int(since), .int(limit ?? -1)])
            let leaves = try connection.prepare(
                "SELECT pos, hash, deleted FROM revs WHERE doc_rowid = ? AND is_leaf = 1")
            while try rows.step() {
                try leaves.bind([.int(rows.int(1))])
                var found = [(rev: RevID, deleted: Bool)]()
                while try leaves.step() {
                    found.append((RevID(pos: leaves.int(0), hash: leaves.text(1)), leaves.int(2) != 0))
                }
                leaves.reset()
                found.sort(by: RevTree.winsOver)
                let row = ChangeRow(
                    seq: rows.int(0), id: rows.text(2), deleted: rows.int(3) != 0,
                    winner: RevID(pos: rows.int(4), hash: rows.text(5)), leaves: found)
                guard try body(row) else { return }
            }
        }
    }

    /// `_all_docs`: live documents ordered by the UTF-8 bytes of their ids.
    /// - Parameters:
    ///   - startKey, endKey: bounds in iteration order (with `descending`, `startKey` is the higher one).
    ///   - inclusiveEnd: whether `endKey` itself is included.
    ///   - body: return false to stop.
    public func allDocs(
        startKey: String?, endKey: String?, inclusiveEnd: Bool, descending: Bool, skip: Int, limit: Int?,
        _ body: (DocumentInfo) throws -> Bool
    ) throws {
        try readers.read { connection in
            var sql = "SELECT doc_rowid, doc_id, seq FROM docs WHERE deleted = 0"
            var bindings = [SQLiteValue]()
            if let startKey {
                sql += descending ? " AND doc_id <= ?" : " AND doc_id >= ?"
                bindings.append(.text(startKey))
            }
            if let endKey {
                sql += descending ? (inclusiveEnd ? " AND doc_id >= ?" : " AND doc_id > ?")
                    : (inclusiveEnd ? " AND doc_id <= ?" : " AND doc_id < ?")
                bindings.append(.text(endKey))
            }
            sql += " ORDER BY doc_id \(descending ? "DESC" : "ASC") LIMIT ? OFFSET ?"
            bindings += [.int(limit ?? -1), .int(max(0, skip))]
            let rows = try connection.prepare(sql)
            defer { rows.reset() }
            try rows.bind(bindings)
            while try rows.step() {
                guard let info = try Database.documentInfo(
                    id: rows.text(1), rowid: rows.int(0), seq: rows.int(2), connection)
                else { continue }
                guard try body(info) else { return }
            }
        }
    }

    /// A `_local` document: its `N` and body.
    public func localDocument(_ id: String) throws -> (rev: Int, body: [UInt8])? {
        try readers.read { connection in
            let statement = try connection.prepare("SELECT rev, body FROM local_docs WHERE doc_id = ?")
            defer { statement.reset() }
            try statement.bind([.text(id)])
            guard try statement.step() else { return nil }
            return (statement.int(0), statement.blob(1) ?? [])
        }
    }

    /// Blob keys referenced by any stored revision.
    public func referencedBlobKeys() throws -> Set<String> {
        try readers.read { try Database.blobKeys($0) }
    }
}
