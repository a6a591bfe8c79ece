import Foundation
import RevTree

extension Database {
    /// `GET /db` facts from one committed snapshot.
    public func info() throws -> DatabaseInfo {
        let path = self.path
        let name = self.name
        return try read { connection in
            let meta = try Meta.load(connection)
            let pageSize = try connection.scalarInt("PRAGMA page_size") ?? 0
            let pages = try connection.scalarInt("PRAGMA page_count") ?? 0
            let free = try connection.scalarInt("PRAGMA freelist_count") ?? 0
            var fileSize = 0
            for suffix in ["", "-wal"] {
                let attributes = try? FileManager.default.attributesOfItem(atPath: path + suffix)
                fileSize += (attributes?[.size] as? NSNumber)?.intValue ?? 0
            }
            return DatabaseInfo(
                name: name, docCount: meta.docCount, docDelCount: meta.docDelCount, updateSeq: meta.updateSeq,
                purgeSeq: meta.purgeSeq, fileSize: fileSize, activeSize: (pages - free) * pageSize,
                externalSize: meta.externalSize, revsLimit: meta.revsLimit)
        }
    }

    /// A document's tree and winner; nil if it never existed (a deleted document is returned, `deleted` true).
    public func document(_ id: String) throws -> DocumentInfo? {
        try read { connection in try Database.documentInfo(id, connection) }
    }

    static func documentInfo(_ id: String, _ connection: SQLiteConnection) throws -> DocumentInfo? {
        guard let doc = try loadDocument(id, connection) else { return nil }
        return documentInfo(id: id, seq: doc.seq, tree: doc.tree)
    }

    static func documentInfo(id: String, seq: Int, tree: RevTree) -> DocumentInfo? {
        guard let winner = tree.winner else { return nil }
        return DocumentInfo(
            id: id, seq: seq, winner: winner.rev, deleted: winner.deleted,
            leaves: tree.leaves.map { ($0.rev, $0.deleted) }, tree: tree)
    }

    /// One revision with its body and attachments.
    /// - Parameter rev: the revision; nil for the winner (returned even when deleted).
    /// - Returns: nil when the document or revision is not stored.
    public func revision(_ id: String, rev: RevID?) throws -> StoredRevision? {
        try read { connection in
            guard let doc = try Database.loadDocument(id, connection),
                let target = rev ?? doc.tree.winner?.rev
            else { return nil }
            return try Database.storedRevision(target, of: doc.stored, connection)
        }
    }

    /// The winning revision of each id (nil where the document is not stored), read with one connection:
    /// what a feed that looks at every document (a JavaScript filter) reads per page.
    public func winningRevisions(_ ids: [String]) throws -> [StoredRevision?] {
        try read { connection in
            try ids.map { id in
                guard let doc = try Database.loadDocument(id, connection), let winner = doc.tree.winner?.rev else {
                    return nil
                }
                return try Database.storedRevision(winner, of: doc.stored, connection)
            }
        }
    }

    /// Looks up documents' revisions as `_bulk_get` asks for them, as many as `bodyBudget` allows in one read
    /// transaction of one pooled reader (checking a reader out per document cost `_bulk_get` a third of its CPU in
    /// lock contention). Stops after the query whose bodies took the bytes read past `bodyBudget`, so what it holds
    /// is bounded by the budget plus one document; the caller asks again for the rest.
    /// - Returns: one answer per query answered, in order: at least one when `queries` is not empty.
    public func revisions(_ queries: ArraySlice<RevisionQuery>, bodyBudget: Int) throws -> [RevisionAnswer] {
        try read { connection in
            var answers: [RevisionAnswer] = []
            var bytes = 0
            for query in queries {
                guard bytes <= bodyBudget else { break }
                let answer = try Database.answer(query, connection)
                bytes += answer.revisions.reduce(0) { $0 + ($1.revision?.body?.count ?? 0) }
                answers.append(answer)
            }
            return answers
        }
    }

    private static func answer(_ query: RevisionQuery, _ connection: SQLiteConnection) throws -> RevisionAnswer {
        guard let doc = try loadDocument(query.id, connection),
            let info = documentInfo(id: query.id, seq: doc.seq, tree: doc.tree)
        else { return RevisionAnswer(info: nil, revisions: []) }
        let targets = query.rev.map { query.latest ? info.tree.latest(of: $0) : [$0] } ?? [info.winner]
        let revisions = try targets.map { rev in
            (rev: rev, revision: try storedRevision(rev, of: doc.stored, connection))
        }
        return RevisionAnswer(info: info, revisions: revisions)
    }

    /// Every leaf with its body, winner first (`open_revs=all`).
    public func leafRevisions(_ id: String) throws -> [StoredRevision] {
        try read { connection in
            guard let doc = try Database.loadDocument(id, connection) else { return [] }
            return try doc.tree.leaves.compactMap { try Database.storedRevision($0.rev, of: doc.stored, connection) }
        }
    }

    /// `rev` of a stored document with its body and attachments (body nil when the revision has none).
    static func storedRevision(_ rev: RevID, of stored: StoredTree, _ connection: SQLiteConnection) throws
        -> StoredRevision?
    {
        guard let index = stored.tree.index(of: rev) else { return nil }
        var body: [UInt8]?
        var attachments = [AttachmentInfo]()
        let ref = stored.bodies[index]
        if let ref {
            let statement = try connection.statement(.body)
            defer { statement.rewind() }
            try statement.bind(1, ref.seq)
            if try statement.step() {
                body = statement.blob(0)
                if !statement.isNull(1) {
                    attachments = try statement.withBlob(1) { try RowCodec.decodeAttachments($0) }
                }
            }
        }
        return StoredRevision(
            rev: rev, deleted: stored.tree.nodes[index].deleted, body: body, attachments: attachments,
            history: stored.tree.history(of: rev), localSeq: ref?.seq ?? 0)
    }

    /// `_revs_diff`: for each document, the given revs the database lacks and the leaves that may be their
    /// ancestors (leaves with a lower generation than some missing rev, `couch_db:find_missing`). Documents with
    /// nothing missing are left out.
    public func revsDiff(_ request: [(id: String, revs: [RevID])]) throws
        -> [(id: String, missing: [RevID], possibleAncestors: [RevID])]
    {
        try read { connection in
            // One row per document holds its whole tree: every requested rev is decided from it.
            var out = [(id: String, missing: [RevID], possibleAncestors: [RevID])]()
            for (id, revs) in request {
                let tree = try Database.loadDocument(id, connection)?.tree ?? RevTree()
                let missing = tree.missing(revs)
                guard !missing.isEmpty else { continue }
                out.append((id, missing, tree.possibleAncestors(for: missing)))
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
        try changeRows(descending ? .changesDescending : .changesAscending, bound: since, limit: limit, body)
    }

    /// `_changes?descending=true` a page at a time: rows with seq below `before`, highest first.
    public func changes(before: Int, limit: Int?, _ body: (ChangeRow) throws -> Bool) throws {
        try changeRows(.changesBefore, bound: before, limit: limit, body)
    }

    private func changeRows(_ query: Query, bound: Int, limit: Int?, _ body: (ChangeRow) throws -> Bool) throws {
        let limit = limit.flatMap { $0 < 0 ? nil : $0 }
        if limit == 0 { return }
        try read { connection in
            let rows = try connection.statement(query)
            defer { rows.rewind() }
            try rows.bind(1, bound)
            var emitted = 0
            while try rows.step() {
                let tree = try rows.withBlob(3) { try RowCodec.decodeTree($0).tree }
                guard let winner = tree.winner else { continue }
                let row = ChangeRow(
                    seq: rows.int(0), id: rows.text(1), deleted: rows.int(2) != 0, winner: winner.rev,
                    leaves: tree.leaves.map { ($0.rev, $0.deleted) })
                emitted += 1
                guard try body(row) else { return }
                if let limit, emitted >= limit { return }
            }
        }
    }

    /// Live documents whose ids sort before `key` in the direction of iteration: `_all_docs`'s `offset`. One
    /// indexed count, no trees built.
    public func liveDocumentCount(before key: String, descending: Bool) throws -> Int {
        try read { connection in
            let sql = "SELECT count(*) FROM documents WHERE deleted = 0 AND doc_id \(descending ? ">" : "<") ?"
            let rows = try connection.prepare(sql)
            defer { rows.reset() }
            try rows.bind([.text(key)])
            return try rows.step() ? rows.int(0) : 0
        }
    }

    /// Documents whose latest update is after `seq`: `_changes`'s `pending`. One indexed count.
    public func changeCount(since seq: Int) throws -> Int {
        try read { connection in
            let rows = try connection.prepare("SELECT count(*) FROM documents WHERE seq > ?")
            defer { rows.reset() }
            try rows.bind([.int(seq)])
            return try rows.step() ? rows.int(0) : 0
        }
    }

    /// `_all_docs`: live documents ordered by the UTF-8 bytes of their ids.
    /// - Parameters:
    ///   - startKey, endKey: bounds in iteration order (with `descending`, `startKey` is the higher one).
    ///   - inclusiveStart: whether `startKey` itself is included (false to read the page after a row).
    ///   - inclusiveEnd: whether `endKey` itself is included.
    ///   - body: return false to stop.
    public func allDocs(
        startKey: String?, inclusiveStart: Bool = true, endKey: String?, inclusiveEnd: Bool, descending: Bool,
        skip: Int, limit: Int?, _ body: (DocumentInfo) throws -> Bool
    ) throws {
        try read { connection in
            var (sql, bindings) = Database.idRange(
                "SELECT seq, doc_id, tree FROM documents WHERE deleted = 0", startKey: startKey,
                inclusiveStart: inclusiveStart, endKey: endKey, inclusiveEnd: inclusiveEnd, descending: descending)
            // SQLite steps over skipped rows without handing them out, so their trees are never decoded.
            sql += " LIMIT -1 OFFSET ?"
            bindings.append(.int(max(0, skip)))
            let limit = limit.flatMap { $0 < 0 ? nil : $0 }
            if limit == 0 { return }
            let rows = try connection.prepare(sql)
            defer { rows.reset() }
            try rows.bind(bindings)
            var emitted = 0
            while try rows.step() {
                let tree = try rows.withBlob(2) { try RowCodec.decodeTree($0).tree }
                guard let info = Database.documentInfo(id: rows.text(1), seq: rows.int(0), tree: tree) else { continue }
                emitted += 1
                guard try body(info) else { return }
                if let limit, emitted >= limit { return }
            }
        }
    }

    /// A `_local` document: its `N` and body.
    public func localDocument(_ id: String) throws -> (rev: Int, body: [UInt8])? {
        try read { connection in
            let statement = try connection.statement(.localDocument)
            defer { statement.rewind() }
            try statement.bind(1, id)
            guard try statement.step() else { return nil }
            return (statement.int(0), statement.blob(1) ?? [])
        }
    }

    /// `select` narrowed to ids between the bounds (in iteration order: with `descending`, `startKey` is the
    /// higher) and ordered by id, with the values to bind; `_all_docs` and `_local_docs` read through it.
    static func idRange(
        _ select: String, startKey: String?, inclusiveStart: Bool, endKey: String?, inclusiveEnd: Bool,
        descending: Bool
    ) -> (sql: String, bindings: [SQLiteValue]) {
        var sql = select
        var bindings = [SQLiteValue]()
        if let startKey {
            let orEqual = inclusiveStart ? "=" : ""
            sql += descending ? " AND doc_id <\(orEqual) ?" : " AND doc_id >\(orEqual) ?"
            bindings.append(.text(startKey))
        }
        if let endKey {
            let orEqual = inclusiveEnd ? "=" : ""
            sql += descending ? " AND doc_id >\(orEqual) ?" : " AND doc_id <\(orEqual) ?"
            bindings.append(.text(endKey))
        }
        sql += " ORDER BY doc_id \(descending ? "DESC" : "ASC")"
        return (sql, bindings)
    }

    /// `_local` documents in id order (`_local_docs`), each handed to `body` with its `N` and body until it returns
    /// false or `limit` were handed; the bounds as `allDocs` takes them.
    public func localDocuments(
        startKey: String?, inclusiveStart: Bool = true, endKey: String?, inclusiveEnd: Bool, descending: Bool,
        skip: Int, limit: Int?, _ body: (_ id: String, _ rev: Int, _ body: [UInt8]) throws -> Bool
    ) throws {
        let limit = limit.flatMap { $0 < 0 ? nil : $0 }
        if limit == 0 { return }
        try read { connection in
            var (sql, bindings) = Database.idRange(
                "SELECT doc_id, rev, body FROM local_docs WHERE 1", startKey: startKey, inclusiveStart: inclusiveStart,
                endKey: endKey, inclusiveEnd: inclusiveEnd, descending: descending)
            sql += " LIMIT -1 OFFSET ?"
            bindings.append(.int(max(0, skip)))
            let rows = try connection.prepare(sql)
            defer { rows.reset() }
            try rows.bind(bindings)
            var emitted = 0
            while try rows.step() {
                emitted += 1
                guard try body(rows.text(0), rows.int(1), rows.blob(2) ?? []) else { return }
                if let limit, emitted >= limit { return }
            }
        }
    }

    /// Blob keys referenced by any stored revision. Only the tests call it (`compact` returns the same set).
    func referencedBlobKeys() throws -> Set<String> {
        try read { try Database.blobKeys($0) }
    }
}
