/// The per-document write steps, run on the writer thread inside the group transaction.
extension Database {
    /// A document as loaded for an update.
    struct LoadedDoc {
        var rowid: Int
        var deleted: Bool
        var tree: RevTree
        var rowids: [RevID: Int]
    }

    static func loadForWrite(_ id: String, _ connection: SQLiteConnection) throws -> LoadedDoc? {
        let doc = try connection.prepare("SELECT doc_rowid, deleted FROM docs WHERE doc_id = ?")
        defer { doc.reset() }
        try doc.bind([.text(id)])
        guard try doc.step() else { return nil }
        let rowid = doc.int(0)
        let deleted = doc.int(1) != 0
        let (tree, rowids) = try loadTree(rowid, connection)
        return LoadedDoc(rowid: rowid, deleted: deleted, tree: tree, rowids: rowids)
    }

    static func loadTree(_ docRowid: Int, _ connection: SQLiteConnection) throws -> (RevTree, [RevID: Int]) {
        let revs = try connection.prepare(
            "SELECT rev_rowid, pos, hash, parent, deleted, body IS NOT NULL FROM revs WHERE doc_rowid = ?")
        defer { revs.reset() }
        try revs.bind([.int(docRowid)])
        var raw = [(rowid: Int, rev: RevID, parent: Int?, deleted: Bool, hasBody: Bool)]()
        while try revs.step() {
            raw.append((revs.int(0), RevID(pos: revs.int(1), hash: revs.text(2)), revs.optionalInt(3),
                        revs.int(4) != 0, revs.int(5) != 0))
        }
        var revByRowid = [Int: RevID](minimumCapacity: raw.count)
        var rowids = [RevID: Int](minimumCapacity: raw.count)
        for row in raw {
            revByRowid[row.rowid] = row.rev
            rowids[row.rev] = row.rowid
        }
        let tree = RevTree(rows: raw.map { ($0.rev, $0.parent.flatMap { revByRowid[$0] }, $0.deleted, $0.hasBody) })
        return (tree, rowids)
    }

    static func replicate(_ write: RevisionWrite, _ connection: SQLiteConnection, _ meta: inout Meta) throws {
        let existing = try loadForWrite(write.docID, connection)
        let before = existing?.tree ?? RevTree()
        // Already stored with its body: an idempotent resend, nothing to resolve or write.
        if let node = before.node(write.path[0]), node.hasBody { return }
        let ancestors = write.path.dropFirst().compactMap { existing?.rowids[$0] }
        let attachments = try resolveAttachments(write.attachments, ancestors: ancestors, newPos: nil, connection)
        var tree = before
        let merged: RevTree.MergeResult
        do {
            merged = try tree.merge(path: write.path, deleted: write.deleted)
        } catch {
            throw StoreError.invalidRev
        }
        tree.stem(limit: meta.revsLimit)
        guard tree != before else { return }
        try persist(write, leaf: write.path[0], leafValueSet: merged.leafValueSet, attachments: attachments,
                    existing: existing, before: before, after: tree, connection, &meta)
    }

    static func edit(_ write: RevisionWrite, _ connection: SQLiteConnection, _ meta: inout Meta) throws -> RevID {
        let existing = try loadForWrite(write.docID, connection)
        let before = existing?.tree ?? RevTree()
        let parent: RevID?
        if let base = write.path.first {
            // CouchDB: any edit of a document whose winner is deleted must be a gen-1 recreation.
            guard existing != nil, !before.isDeleted, before.isLeaf(base) else { throw StoreError.conflict }
            parent = base
        } else if existing != nil {
            guard before.isDeleted, !write.deleted, let winner = before.winner else { throw StoreError.conflict }
            parent = winner.rev
        } else {
            parent = nil
        }
        let newPos = (parent?.pos ?? 0) + 1
        let ancestors = parent.flatMap { existing?.rowids[$0] }.map { [$0] } ?? []
        let attachments = try resolveAttachments(write.attachments, ancestors: ancestors, newPos: newPos, connection)
        let hash = RevisionHash.compute(
            parent: parent, deleted: write.deleted, body: write.body,
            attachments: attachments.map { ($0.name, $0.digest) })
        let newRev = RevID(pos: newPos, hash: hash)
        var tree = before
        let merged: RevTree.MergeResult
        do {
            merged = try tree.merge(path: [newRev] + (parent.map { [$0] } ?? []), deleted: write.deleted)
        } catch {
            throw StoreError.invalidRev
        }
        guard merged.outcome == .newLeaf else { throw StoreError.conflict }
        tree.stem(limit: meta.revsLimit)
        try persist(write, leaf: newRev, leafValueSet: true, attachments: attachments, existing: existing,
                    before: before, after: tree, connection, &meta)
        return newRev
    }

    /// Resolves stubs against the nearest listed ancestor that has the attachment name.
    /// - Parameters:
    ///   - ancestors: rev rowids, nearest first.
    ///   - newPos: for interactive edits, the new generation (becomes the `revpos` of new data).
    static func resolveAttachments(
        _ refs: [AttachmentRef], ancestors: [Int], newPos: Int?, _ connection: SQLiteConnection
    ) throws -> [AttachmentInfo] {
        var byName = [String: AttachmentInfo]()
        for ref in refs {
            switch ref {
            case .stored(var info):
                if let newPos { info.revpos = newPos }
                byName[info.name] = info
            case .stub(let name, let revpos, let digest):
                guard let found = try findAttachment(name, in: ancestors, connection),
                    revpos.map({ $0 == found.revpos }) ?? true,
                    digest.map({ $0 == found.digest }) ?? true
                else { throw StoreError.missingStub(name) }
                byName[name] = found
            }
        }
        return byName.values.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    static func findAttachment(_ name: String, in ancestors: [Int], _ connection: SQLiteConnection) throws
        -> AttachmentInfo?
    {
        let statement = try connection.prepare(
            """
            SELECT name, content_type, digest, length, revpos, encoding, encoded_length, blob_key
            FROM rev_attachments WHERE rev_rowid = ? AND name = ?
            """)
        for rowid in ancestors {
            defer { statement.reset() }
            try statement.bind([.int(rowid), .text(name)])
            if try statement.step() { return attachment(statement) }
        }
        return nil
    }

    static func attachment(_ statement: SQLiteStatement) -> AttachmentInfo {
        AttachmentInfo(
            name: statement.text(0), contentType: statement.text(1), digest: statement.text(2),
            length: statement.int(3), revpos: statement.int(4), encoding: statement.optionalText(5),
            encodedLength: statement.optionalInt(6), blobKey: statement.text(7))
    }

    /// Writes the difference between `before` and `after` and gives the document the next seq.
    static func persist(
        _ write: RevisionWrite, leaf: RevID, leafValueSet: Bool, attachments: [AttachmentInfo],
        existing: LoadedDoc?, before: RevTree, after: RevTree, _ connection: SQLiteConnection, _ meta: inout Meta
    ) throws {
        guard let winner = after.winner else { return }
        meta.updateSeq += 1
        let seq = meta.updateSeq
        let docRowid: Int
        if let existing {
            docRowid = existing.rowid
            try connection.run(
                "UPDATE docs SET seq = ?, winner_pos = ?, winner_hash = ?, deleted = ? WHERE doc_rowid = ?",
                [.int(seq), .int(winner.rev.pos), .text(winner.rev.hash), .int(winner.deleted ? 1 : 0),
                 .int(docRowid)])
            if existing.deleted != winner.deleted {
                meta.docCount += winner.deleted ? -1 : 1
                meta.docDelCount += winner.deleted ? 1 : -1
            }
        } else {
            try connection.run(
                "INSERT INTO docs (doc_id, seq, winner_pos, winner_hash, deleted) VALUES (?, ?, ?, ?, ?)",
                [.text(write.docID), .int(seq), .int(winner.rev.pos), .text(winner.rev.hash),
                 .int(winner.deleted ? 1 : 0)])
            docRowid = Int(connection.lastInsertRowID)
            if winner.deleted { meta.docDelCount += 1 } else { meta.docCount += 1 }
        }
        var rowids = existing?.rowids ?? [:]
        for (rev, rowid) in rowids where !after.contains(rev) {
            try connection.run("DELETE FROM revs WHERE rev_rowid = ?", [.int(rowid)])
            try connection.run("DELETE FROM rev_attachments WHERE rev_rowid = ?", [.int(rowid)])
            rowids[rev] = nil
        }
        // Parents before children, so a new parent has its rowid when its child is written.
        for node in after.nodes.sorted(by: { $0.rev.pos < $1.rev.pos }) {
            let parentRev = node.parent.map { after.nodes[$0].rev }
            let parentRowid: SQLiteValue = parentRev.flatMap { rowids[$0] }.map { .int($0) } ?? .null
            let isWrittenLeaf = node.rev == leaf && leafValueSet
            if let rowid = rowids[node.rev] {
                if isWrittenLeaf {
                    try connection.run(
                        "UPDATE revs SET parent = ?, is_leaf = ?, deleted = ?, body = ?, local_seq = ? WHERE rev_rowid = ?",
                        [parentRowid, .int(node.isLeaf ? 1 : 0), .int(node.deleted ? 1 : 0), .blob(write.body),
                         .int(seq), .int(rowid)])
                } else if let old = before.node(node.rev),
                    old.isLeaf != node.isLeaf || old.deleted != node.deleted || before.parent(of: node.rev) != parentRev
                {
                    try connection.run(
                        "UPDATE revs SET parent = ?, is_leaf = ?, deleted = ? WHERE rev_rowid = ?",
                        [parentRowid, .int(node.isLeaf ? 1 : 0), .int(node.deleted ? 1 : 0), .int(rowid)])
                }
            } else {
                try connection.run(
                    """
                    INSERT INTO revs (doc_rowid, pos, hash, parent, is_leaf, deleted, body, local_seq)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [.int(docRowid), .int(node.rev.pos), .text(node.rev.hash), parentRowid, .int(node.isLeaf ? 1 : 0),
                     .int(node.deleted ? 1 : 0), isWrittenLeaf ? .blob(write.body) : .null,
                     .int(isWrittenLeaf ? seq : 0)])
                rowids[node.rev] = Int(connection.lastInsertRowID)
            }
        }
        guard leafValueSet, let leafRowid = rowids[leaf] else { return }
        try connection.run("DELETE FROM rev_attachments WHERE rev_rowid = ?", [.int(leafRowid)])
        for info in attachments {
            try connection.run(
                """
                INSERT INTO rev_attachments
                  (rev_rowid, name, content_type, digest, length, revpos, encoding, encoded_length, blob_key)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [.int(leafRowid), .text(info.name), .text(info.contentType), .text(info.digest), .int(info.length),
                 .int(info.revpos), info.encoding.map { .text($0) } ?? .null,
                 info.encodedLength.map { .int($0) } ?? .null, .text(info.blobKey)])
        }
    }
}
