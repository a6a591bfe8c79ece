import RevTree

/// The per-document write steps, run on the writer thread inside the group transaction.
extension Database {
    /// A document's `documents` row, decoded.
    struct LoadedDoc {
        /// The document's latest update (the row's key).
        var seq: Int
        /// The winner is deleted.
        var deleted: Bool
        var stored: StoredTree

        var tree: RevTree { stored.tree }
    }

    /// The row of `id`, nil if the document never existed.
    static func loadDocument(_ id: String, _ connection: SQLiteConnection) throws -> LoadedDoc? {
        let statement = try connection.statement(.documentByID)
        defer { statement.rewind() }
        try statement.bind(1, id)
        guard try statement.step() else { return nil }
        let stored = try statement.withBlob(2) { try RowCodec.decodeTree($0) }
        return LoadedDoc(seq: statement.int(0), deleted: statement.int(1) != 0, stored: stored)
    }

    static func replicate(_ write: RevisionWrite, _ connection: SQLiteConnection, _ meta: inout Meta) throws {
        // When the document is probably new, the insert is tried first: that probes the id index once instead of
        // a lookup and then an insert. For a stored document the failed insert would be wasted work (about a
        // seventh of an update's cost), so the guess follows what the batch's previous document turned out to be.
        // Stubs need the stored document, so they always look it up.
        if meta.lastWriteCreated, !write.attachments.contains(where: \.isStub) {
            let attachments = try resolveAttachments(write.attachments, ancestors: [], newPos: nil, connection)
            if try insertNew(write, path: write.path, attachments: attachments, connection, &meta) { return }
        }
        guard let existing = try loadDocument(write.docID, connection) else {
            let attachments = try resolveAttachments(write.attachments, ancestors: [], newPos: nil, connection)
            try insertAbsent(write, path: write.path, attachments: attachments, connection, &meta)
            return
        }
        meta.lastWriteCreated = false
        let before = existing.tree
        // Already stored with its body: an idempotent resend, nothing to resolve or write.
        if let node = before.node(write.path[0]), node.hasBody { return }
        let ancestors = write.path.dropFirst().compactMap { existing.stored.body(of: $0) }
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
            existing: existing, after: tree, connection, &meta)
    }

    /// `insertNew` for a document just looked up and not found: not inserting it means the file is damaged.
    static func insertAbsent(
        _ write: RevisionWrite, path: [RevID], attachments: [AttachmentInfo], _ connection: SQLiteConnection,
        _ meta: inout Meta
    ) throws {
        guard try insertNew(write, path: path, attachments: attachments, connection, &meta) else {
            throw StoreError.internalError("the row of a new document could not be inserted")
        }
    }

    /// Stores a document unless it has a row already: `path` (leaf first, already validated) stemmed to
    /// `_revs_limit` is its whole tree, so the row is encoded directly — no tree is built. Equivalent to merging
    /// `path` into an empty tree, stemming and `persist`.
    /// - Returns: false, with nothing written, when the document exists.
    static func insertNew(
        _ write: RevisionWrite, path: [RevID], attachments: [AttachmentInfo], _ connection: SQLiteConnection,
        _ meta: inout Meta
    ) throws -> Bool {
        let seq = meta.updateSeq + 1
        let written = BodyRef(seq: seq, body: write.body, attachments: attachments)
        let kept = min(path.count, max(1, meta.revsLimit))
        // Oldest kept ancestor first, each node's parent the one before it.
        var nodes = [RevTree.LinkedNode]()
        var bodies = [BodyRef?]()
        nodes.reserveCapacity(kept)
        bodies.reserveCapacity(kept)
        for offset in stride(from: kept - 1, through: 0, by: -1) {
            let isLeaf = offset == 0
            nodes.append(
                RevTree.LinkedNode(
                    rev: path[offset], parent: nodes.isEmpty ? nil : nodes.count - 1, deleted: isLeaf && write.deleted,
                    hasBody: isLeaf))
            bodies.append(isLeaf ? written : nil)
        }
        let insert = try connection.statement(.insertDocument)
        let tree = RowCodec.encodeTree(nodes, bodies: bodies)
        var id = write.docID
        do {
            defer { insert.rewind() }
            try insert.bind(1, seq)
            try insert.bind(3, write.deleted)
            try bindAttachments(attachments, at: 6, insert)
            try id.withUTF8 { id in
                try tree.withUnsafeBytes { tree in
                    try write.body.withUnsafeBytes { body in
                        try insert.bindBorrowed(2, text: id)
                        try insert.bindBorrowed(4, blob: tree)
                        try insert.bindBorrowed(5, blob: body)
                        while try insert.step() {}
                    }
                }
            }
        }
        guard connection.changes == 1 else { return false }
        meta.lastWriteCreated = true
        meta.updateSeq = seq
        if write.deleted { meta.docDelCount += 1 } else { meta.docCount += 1 }
        meta.externalSize += written.externalSize
        return true
    }

    /// - Parameter hashDigest: the digest CouchDB would hash for an attachment, when not its own (see
    ///   `AttachmentHashDigest`).
    static func edit(
        _ write: RevisionWrite, _ connection: SQLiteConnection, _ meta: inout Meta,
        hashDigest: (@Sendable (AttachmentInfo) -> String?)? = nil
    ) throws -> RevID {
        let existing = try loadDocument(write.docID, connection)
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
        let ancestors = parent.flatMap { existing?.stored.body(of: $0) }.map { [$0] } ?? []
        let attachments = try resolveAttachments(write.attachments, ancestors: ancestors, newPos: newPos, connection)
        let hash = RevisionHash.compute(
            parent: parent, deleted: write.deleted, body: write.body,
            attachments: attachments.map {
                .init(name: $0.name, contentType: $0.contentType, digest: hashDigest?($0) ?? $0.digest)
            })
        let newRev = RevID(pos: newPos, hash: hash)
        guard let existing else {
            try insertAbsent(write, path: [newRev], attachments: attachments, connection, &meta)
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
            write, leaf: newRev, leafValueSet: true, attachments: attachments, existing: existing, after: tree,
            connection, &meta)
        return newRev
    }

    /// Resolves stubs against the nearest listed ancestor that has the attachment name.
    /// - Parameters:
    ///   - ancestors: bodies of ancestors, nearest first.
    ///   - newPos: for interactive edits, the new generation (becomes the `revpos` of new data).
    static func resolveAttachments(
        _ refs: [AttachmentRef], ancestors: [BodyRef], newPos: Int?, _ connection: SQLiteConnection
    ) throws -> [AttachmentInfo] {
        if refs.isEmpty { return [] }
        // Each ancestor's list is read once, when a stub first needs it.
        var loaded = [[AttachmentInfo]?](repeating: nil, count: ancestors.count)
        func find(_ name: String) throws -> AttachmentInfo? {
            for index in ancestors.indices {
                let list = try loaded[index] ?? attachments(ofBodyAt: ancestors[index].seq, connection)
                loaded[index] = list
                // Names compare by bytes: a look-alike name is another attachment (CouchDB compares binaries).
                if let found = list.first(where: { $0.name.utf8.elementsEqual(name.utf8) }) { return found }
            }
            return nil
        }
        // In the order given, as CouchDB keeps them (its rev hash depends on it); a repeated name keeps its first
        // place and takes the last value.
        var byName = [[UInt8]: AttachmentInfo]()
        var order: [[UInt8]] = []
        for ref in refs {
            if byName[Array(ref.name.utf8)] == nil { order.append(Array(ref.name.utf8)) }
            switch ref {
            case .stored(var info):
                if let newPos { info.revpos = newPos }
                byName[Array(info.name.utf8)] = info
            case .stub(let name, let revpos, let digest):
                guard let found = try find(name),
                    revpos.map({ $0 == found.revpos }) ?? true,
                    digest.map({ $0 == found.digest }) ?? true
                else { throw StoreError.missingStub(name) }
                byName[Array(name.utf8)] = found
            }
        }
        return order.compactMap { byName[$0] }
    }

    /// The attachments stored with the body written by update `seq` (none if that body is gone).
    static func attachments(ofBodyAt seq: Int, _ connection: SQLiteConnection) throws -> [AttachmentInfo] {
        let statement = try connection.statement(.bodyAttachments)
        defer { statement.rewind() }
        try statement.bind(1, seq)
        guard try statement.step(), !statement.isNull(0) else { return [] }
        return try statement.withBlob(0) { try RowCodec.decodeAttachments($0) }
    }

    /// Binds a revision's attachment list: NULL for none.
    static func bindAttachments(_ attachments: [AttachmentInfo], at index: Int32, _ statement: SQLiteStatement)
        throws
    {
        if attachments.isEmpty {
            try statement.bindNull(index)
        } else {
            try statement.bind(index, blob: RowCodec.encodeAttachments(attachments))
        }
    }

    static func deleteBody(seq: Int, _ connection: SQLiteConnection) throws {
        let statement = try connection.statement(.deleteBody)
        defer { statement.rewind() }
        try statement.bind(1, seq)
        while try statement.step() {}
    }

    /// Rewrites the document's row as `after` at the next seq, holding the written leaf's body when it got one.
    /// The body the previous update wrote moves to `bodies` if `after` still has it; bodies of revisions stemmed
    /// away are deleted.
    static func persist(
        _ write: RevisionWrite, leaf: RevID, leafValueSet: Bool, attachments: [AttachmentInfo], existing: LoadedDoc,
        after: RevTree, _ connection: SQLiteConnection, _ meta: inout Meta
    ) throws {
        guard let winner = after.winner else { return }
        meta.updateSeq += 1
        let seq = meta.updateSeq
        let before = existing.stored
        let written = BodyRef(seq: seq, body: write.body, attachments: attachments)
        let stored = StoredTree(
            tree: after,
            bodies: after.nodes.map { node in node.rev == leaf && leafValueSet ? written : before.body(of: node.rev) })
        for (index, node) in before.tree.nodes.enumerated() where !after.contains(node.rev) {
            if let body = before.bodies[index] { try deleteBody(seq: body.seq, connection) }
        }
        if stored.bodies.contains(where: { $0?.seq == existing.seq }) {
            let keep = try connection.statement(.keepBody)
            defer { keep.rewind() }
            try keep.bind(1, existing.seq)
            while try keep.step() {}
        }
        let update = try connection.statement(.updateDocument)
        do {
            defer { update.rewind() }
            try update.bind(1, seq)
            try update.bind(2, winner.deleted)
            try update.bind(3, blob: RowCodec.encodeTree(stored))
            if leafValueSet {
                try update.bind(4, blob: write.body)
                try bindAttachments(attachments, at: 5, update)
            } else {
                try update.bindNull(4)
                try update.bindNull(5)
            }
            try update.bind(6, existing.seq)
            while try update.step() {}
        }
        if existing.deleted != winner.deleted {
            meta.docCount += winner.deleted ? -1 : 1
            meta.docDelCount += winner.deleted ? 1 : -1
        }
        meta.externalSize += stored.leafBodyBytes - before.leafBodyBytes
    }
}
