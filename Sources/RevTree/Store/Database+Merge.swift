/// The per-document write steps, run on the writer thread inside the group transaction.
extension Database {
    /// A document as loaded for an update.
    struct LoadedDoc {
        var rowid: Int
        var deleted: Bool
        var tree: RevTree
        /// Row id of each node, parallel to `tree.nodes`.
        var rowids: [Int]

        func rowid(of rev: RevID) -> Int? { tree.index(of: rev).map { rowids[$0] } }
    }

    static func loadForWrite(_ id: String, _ connection: SQLiteConnection) throws -> LoadedDoc? {
        guard let (rowid, _, deleted) = try findDoc(id, connection) else { return nil }
        let (tree, rowids) = try loadTree(rowid, connection)
        return LoadedDoc(rowid: rowid, deleted: deleted, tree: tree, rowids: rowids)
    }

    /// The `docs` row of `id`: rowid, seq and whether the winner is deleted.
    static func findDoc(_ id: String, _ connection: SQLiteConnection) throws -> (rowid: Int, seq: Int, deleted: Bool)? {
        let doc = try connection.statement(.docByID)
        defer { doc.rewind() }
        try doc.bind(1, id)
        guard try doc.step() else { return nil }
        return (doc.int(0), doc.int(1), doc.int(2) != 0)
    }

    /// A document's tree and the row id of each node (parallel to `nodes`).
    static func loadTree(_ docRowid: Int, _ connection: SQLiteConnection) throws -> (RevTree, [Int]) {
        let revs = try connection.statement(.treeRows)
        defer { revs.rewind() }
        try revs.bind(1, docRowid)
        var raw = [RevTree.StoredRow]()
        while try revs.step() {
            raw.append(
                RevTree.StoredRow(
                    rowid: revs.int(0), rev: RevID(pos: revs.int(1), hash: revs.text(2)), parent: revs.optionalInt(3),
                    deleted: revs.int(4) != 0, hasBody: revs.int(5) != 0))
        }
        return (RevTree(stored: raw), raw.map(\.rowid))
    }

    static func replicate(_ write: RevisionWrite, _ connection: SQLiteConnection, _ meta: inout Meta) throws {
        guard let existing = try loadForWrite(write.docID, connection) else {
            // Fast path: a document seen for the first time needs no tree — its path is the whole tree.
            let attachments = try resolveAttachments(write.attachments, ancestors: [], newPos: nil, connection)
            try insertNew(write, path: write.path, attachments: attachments, connection, &meta)
            return
        }
        let before = existing.tree
        // Already stored with its body: an idempotent resend, nothing to resolve or write.
        if let node = before.node(write.path[0]), node.hasBody { return }
        let ancestors = write.path.dropFirst().compactMap { existing.rowid(of: $0) }
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
        try persist(
            write, leaf: write.path[0], leafValueSet: merged.leafValueSet, attachments: attachments,
            existing: existing, before: before, after: tree, connection, &meta)
    }

    /// Stores a document that has no `docs` row yet: `path` (leaf first, already validated) stemmed to
    /// `_revs_limit` is its whole tree, so rows are inserted directly — no tree is built, nothing is read back.
    /// Equivalent to merging `path` into an empty tree, stemming and `persist`.
    static func insertNew(
        _ write: RevisionWrite, path: [RevID], attachments: [AttachmentInfo], _ connection: SQLiteConnection,
        _ meta: inout Meta
    ) throws {
        let leaf = path[0]
        meta.updateSeq += 1
        let seq = meta.updateSeq
        let doc = try connection.statement(.insertDoc)
        defer { doc.rewind() }
        try doc.bind(1, write.docID)
        try doc.bind(2, seq)
        try doc.bind(3, leaf.pos)
        try doc.bind(4, leaf.hash)
        try doc.bind(5, write.deleted)
        while try doc.step() {}
        let docRowid = Int(connection.lastInsertRowID)
        if write.deleted { meta.docDelCount += 1 } else { meta.docCount += 1 }

        let rev = try connection.statement(.insertRev)
        defer { rev.rewind() }
        var parent: Int?
        // Oldest kept ancestor first so each child knows its parent's rowid.
        for offset in stride(from: min(path.count, max(1, meta.revsLimit)) - 1, through: 0, by: -1) {
            let isLeaf = offset == 0
            rev.rewind()
            try rev.bind(1, docRowid)
            try rev.bind(2, path[offset].pos)
            try rev.bind(3, path[offset].hash)
            try rev.bind(4, parent)
            try rev.bind(5, isLeaf)
            try rev.bind(6, isLeaf && write.deleted)
            if isLeaf { try rev.bind(7, blob: write.body) } else { try rev.bindNull(7) }
            try rev.bind(8, isLeaf ? seq : 0)
            while try rev.step() {}
            parent = Int(connection.lastInsertRowID)
        }
        guard let leafRowid = parent else { return }
        try insertAttachments(attachments, revRowid: leafRowid, connection)
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
        let ancestors = parent.flatMap { existing?.rowid(of: $0) }.map { [$0] } ?? []
        let attachments = try resolveAttachments(write.attachments, ancestors: ancestors, newPos: newPos, connection)
        let hash = RevisionHash.compute(
            parent: parent, deleted: write.deleted, body: write.body,
            attachments: attachments.map { ($0.name, $0.digest) })
        let newRev = RevID(pos: newPos, hash: hash)
        guard let existing else {
            try insertNew(write, path: [newRev], attachments: attachments, connection, &meta)
            return newRev
        }
        var tree = before
        let merged: RevTree.MergeResult
        do {
            merged = try tree.merge(path: [newRev] + (parent.map { [$0] } ?? []), deleted: write.deleted)
        } catch {
            throw StoreError.invalidRev
        }
        guard merged.outcome == .newLeaf else { throw StoreError.conflict }
        tree.stem(limit: meta.revsLimit)
        try persist(
            write, leaf: newRev, leafValueSet: true, attachments: attachments, existing: existing,
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
        if refs.isEmpty { return [] }
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
        let statement = try connection.statement(.findAttachment)
        for rowid in ancestors {
            defer { statement.rewind() }
            try statement.bind(1, rowid)
            try statement.bind(2, name)
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

    static func insertAttachments(_ attachments: [AttachmentInfo], revRowid: Int, _ connection: SQLiteConnection)
        throws
    {
        guard !attachments.isEmpty else { return }
        let insert = try connection.statement(.insertAttachment)
        for info in attachments {
            defer { insert.rewind() }
            try insert.bind(1, revRowid)
            try insert.bind(2, info.name)
            try insert.bind(3, info.contentType)
            try insert.bind(4, info.digest)
            try insert.bind(5, info.length)
            try insert.bind(6, info.revpos)
            if let encoding = info.encoding { try insert.bind(7, encoding) } else { try insert.bindNull(7) }
            try insert.bind(8, info.encodedLength)
            try insert.bind(9, info.blobKey)
            while try insert.step() {}
        }
    }

    /// Runs a hot statement whose parameters are all integers (or NULL), to completion.
    private static func runInts(_ query: Query, _ values: Int?..., on connection: SQLiteConnection) throws {
        let statement = try connection.statement(query)
        defer { statement.rewind() }
        for (offset, value) in values.enumerated() { try statement.bind(Int32(offset + 1), value) }
        while try statement.step() {}
    }

    /// Writes the difference between `before` and `after` and gives the document the next seq.
    static func persist(
        _ write: RevisionWrite, leaf: RevID, leafValueSet: Bool, attachments: [AttachmentInfo],
        existing: LoadedDoc, before: RevTree, after: RevTree, _ connection: SQLiteConnection, _ meta: inout Meta
    ) throws {
        guard let winner = after.winner else { return }
        meta.updateSeq += 1
        let seq = meta.updateSeq
        let docRowid = existing.rowid
        let update = try connection.statement(.updateDoc)
        do {
            defer { update.rewind() }
            try update.bind(1, seq)
            try update.bind(2, winner.rev.pos)
            try update.bind(3, winner.rev.hash)
            try update.bind(4, winner.deleted)
            try update.bind(5, docRowid)
            while try update.step() {}
        }
        if existing.deleted != winner.deleted {
            meta.docCount += winner.deleted ? -1 : 1
            meta.docDelCount += winner.deleted ? 1 : -1
        }
        for (index, node) in before.nodes.enumerated() where !after.contains(node.rev) {
            try runInts(.deleteRev, existing.rowids[index], on: connection)
            try runInts(.deleteRevAttachments, existing.rowids[index], on: connection)
        }
        // Row id of each node of `after` (parallel to its nodes), filled in as new rows are inserted.
        var rowids = after.nodes.map { existing.rowid(of: $0.rev) }
        // Parents before children, so a new parent has its rowid when its child is written.
        for index in after.nodes.indices.sorted(by: { after.nodes[$0].rev.pos < after.nodes[$1].rev.pos }) {
            let node = after.nodes[index]
            let parentRev = node.parent.map { after.nodes[$0].rev }
            let parentRowid = node.parent.flatMap { rowids[$0] }
            let isWrittenLeaf = node.rev == leaf && leafValueSet
            if let rowid = rowids[index] {
                if isWrittenLeaf {
                    let statement = try connection.statement(.updateRevWithBody)
                    defer { statement.rewind() }
                    try statement.bind(1, parentRowid)
                    try statement.bind(2, node.isLeaf)
                    try statement.bind(3, node.deleted)
                    try statement.bind(4, blob: write.body)
                    try statement.bind(5, seq)
                    try statement.bind(6, rowid)
                    while try statement.step() {}
                } else if let old = before.node(node.rev),
                    old.isLeaf != node.isLeaf || old.deleted != node.deleted || before.parent(of: node.rev) != parentRev
                {
                    try runInts(
                        .updateRevLinks, parentRowid, node.isLeaf ? 1 : 0, node.deleted ? 1 : 0, rowid,
                        on: connection)
                }
            } else {
                let statement = try connection.statement(.insertRev)
                defer { statement.rewind() }
                try statement.bind(1, docRowid)
                try statement.bind(2, node.rev.pos)
                try statement.bind(3, node.rev.hash)
                try statement.bind(4, parentRowid)
                try statement.bind(5, node.isLeaf)
                try statement.bind(6, node.deleted)
                if isWrittenLeaf { try statement.bind(7, blob: write.body) } else { try statement.bindNull(7) }
                try statement.bind(8, isWrittenLeaf ? seq : 0)
                while try statement.step() {}
                rowids[index] = Int(connection.lastInsertRowID)
            }
        }
        guard leafValueSet, let leafIndex = after.index(of: leaf), let leafRowid = rowids[leafIndex] else { return }
        try runInts(.deleteRevAttachments, leafRowid, on: connection)
        try insertAttachments(attachments, revRowid: leafRowid, connection)
    }
}
