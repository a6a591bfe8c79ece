import RevTree

extension Database {
    /// Applies a `new_edits=false` batch (replication) in one transaction.
    ///
    /// Each path is merged like `couch_key_tree:merge` and stemmed to `_revs_limit`; there is never a conflict.
    /// A revision already stored with its body is skipped, and a document whose tree does not change gets no new
    /// seq, so a resent batch changes nothing. Invalid writes fail alone (their result) and store nothing.
    /// - Parameter abortOnInvalid: any failure other than `.conflict` aborts the whole batch instead: nothing is
    ///   written and `BatchAborted` names the document and its failure (CouchDB's `_bulk_docs` refuses the request,
    ///   e.g. for a missing stub).
    /// - Returns: one result per write, in order; success carries the path's leaf.
    /// - Throws: when the whole transaction fails (SQLite error, database closed), or `BatchAborted`.
    public func applyReplicated(_ writes: [RevisionWrite], abortOnInvalid: Bool = false) throws -> [WriteResult] {
        try applyBatch(writes, abortOnInvalid: abortOnInvalid) { write in
            try RevID.validate(path: write.path)
        } apply: { write, connection, meta in
            try Database.replicate(write, connection, &meta)
            return write.path[0]
        }
    }

    /// Applies a `new_edits=true` batch (interactive edits) in one transaction, in order.
    ///
    /// A write must extend a leaf (`path == [leaf]`) of a live document, else `.conflict`. With no rev it creates
    /// the document, or, if the document's winner is deleted and the write is not a deletion, extends that deleted
    /// winner (CouchDB's recreation); over a live document it is a conflict. New rev ids come from
    /// `RevisionHash.compute`. New attachment data gets `revpos` = the new generation.
    /// - Parameter abortOnInvalid: as for `applyReplicated`; conflicts stay per-document results.
    /// - Returns: one result per write, in order; success carries the new rev.
    public func applyEdits(_ writes: [RevisionWrite], abortOnInvalid: Bool = false) throws -> [WriteResult] {
        let name = self.name
        let hashDigest = registry?.attachmentHashDigest.map { provider in
            { @Sendable (attachment: AttachmentInfo) in provider(name, attachment) }
        }
        return try applyBatch(writes, abortOnInvalid: abortOnInvalid) { write in
            guard write.path.count <= 1 else { throw StoreError.invalidRev }
            if !write.path.isEmpty { try RevID.validate(path: write.path) }
        } apply: { write, connection, meta in
            try Database.edit(write, connection, &meta, hashDigest: hashDigest)
        }
    }

    /// Validates each write outside the writer, then applies the valid ones in order in one transaction; a
    /// document's failure is its own result, never the batch's.
    private func applyBatch(
        _ writes: [RevisionWrite], abortOnInvalid: Bool, validate: (RevisionWrite) throws -> Void,
        apply: @escaping @Sendable (RevisionWrite, SQLiteConnection, inout Meta) throws -> RevID
    ) throws -> [WriteResult] {
        let invalid = writes.map { write -> StoreError? in
            do {
                try Database.validateCommon(write)
                try validate(write)
                return nil
            } catch let error as StoreError {
                return error
            } catch {
                return .invalidRev
            }
        }
        if abortOnInvalid, let index = invalid.firstIndex(where: { $0 != nil }), let error = invalid[index] {
            throw BatchAborted(docID: writes[index].docID, error: error)
        }
        let touchesDesign = writes.contains { $0.docID.utf8.starts(with: "_design/".utf8) }
        defer { if touchesDesign { designDocumentsChanged() } }
        return try write { connection in
            var meta = try Meta.load(connection)
            var results = [WriteResult]()
            results.reserveCapacity(writes.count)
            for (write, error) in zip(writes, invalid) {
                if let error {
                    results.append(WriteResult(docID: write.docID, result: .failure(error)))
                    continue
                }
                do {
                    let rev = try apply(write, connection, &meta)
                    results.append(WriteResult(docID: write.docID, result: .success(rev)))
                } catch let error as StoreError {
                    // Thrown out of the job, the error rolls back its savepoint: nothing of the batch is written.
                    if abortOnInvalid, error != .conflict { throw BatchAborted(docID: write.docID, error: error) }
                    results.append(WriteResult(docID: write.docID, result: .failure(error)))
                }
            }
            try meta.save(connection)
            return results
        }
    }

    /// Stores a `_local` document (no tree, not in `_changes`), never conflicting.
    /// - Parameters:
    ///   - rev: the `N` of the `0-N` rev the client sent, nil if none.
    /// - Returns: the new `N`: `rev + 1`, or 1 without a rev (`couch_db_updater:increment_local_doc_revs`).
    public func putLocal(_ id: String, body: [UInt8], rev: Int? = nil) throws -> Int {
        try Database.validateDocID(id)
        guard body.count <= StoreLimits.maxDocumentBytes else { throw StoreError.documentTooLarge(id) }
        let newRev = (rev ?? 0) &+ 1
        guard newRev >= 1 else { throw StoreError.invalidRev }
        return try write { connection in
            try connection.run(
                "INSERT OR REPLACE INTO local_docs (doc_id, rev, body) VALUES (?, ?, ?)",
                [.text(id), .int(newRev), .blob(body)])
            return newRev
        }
    }

    /// Deletes a `_local` document.
    /// - Returns: whether it existed.
    public func deleteLocal(_ id: String) throws -> Bool {
        try write { connection in
            try connection.run("DELETE FROM local_docs WHERE doc_id = ?", [.text(id)])
            return connection.changes > 0
        }
    }

    /// Drops the bodies of non-leaf revisions in one transaction (a crash leaves either the old or the new
    /// state), then checkpoints the WAL. Seqs do not change.
    /// - Returns: the blob keys still referenced; the blob store may delete every other blob.
    @discardableResult
    public func compact() throws -> Set<String> {
        try write(checkpointAfter: true) { connection in
            try Database.dropAncestorBodies(connection)
            return try Database.blobKeys(connection)
        }
    }

    /// Only `bodies` is touched: a row's own body is the one its latest update wrote, a leaf until the next update
    /// moves it out. Documents are read in seq-ordered chunks and rewritten after each chunk, so no statement reads a table
    /// while it is being changed and memory stays bounded.
    static func dropAncestorBodies(_ connection: SQLiteConnection) throws {
        let chunk = 1000
        let read = try connection.prepare("SELECT seq, tree FROM documents WHERE seq > ? ORDER BY seq LIMIT ?")
        let rewrite = try connection.prepare("UPDATE documents SET tree = ? WHERE seq = ?")
        var after = 0
        while true {
            var changed = [(seq: Int, stored: StoredTree, dropped: [Int])]()
            var count = 0
            do {
                defer { read.reset() }
                try read.bind([.int(after), .int(chunk)])
                while try read.step() {
                    count += 1
                    after = read.int(0)
                    var stored = try read.withBlob(1) { try RowCodec.decodeTree($0) }
                    var dropped = [Int]()
                    for index in stored.tree.nodes.indices where !stored.tree.nodes[index].isLeaf {
                        guard let body = stored.bodies[index] else { continue }
                        dropped.append(body.seq)
                        stored.bodies[index] = nil
                    }
                    if !dropped.isEmpty { changed.append((after, stored, dropped)) }
                }
            }
            for document in changed {
                // The encoded tree takes each node's body flag from `bodies`.
                try rewrite.bind([.blob(RowCodec.encodeTree(document.stored)), .int(document.seq)])
                while try rewrite.step() {}
                rewrite.reset()
                for seq in document.dropped { try deleteBody(seq: seq, connection) }
            }
            if count < chunk { return }
        }
    }

    static func blobKeys(_ connection: SQLiteConnection) throws -> Set<String> {
        let statement = try connection.prepare(
            """
            SELECT attachments FROM documents WHERE attachments IS NOT NULL
            UNION ALL SELECT attachments FROM bodies WHERE attachments IS NOT NULL
            """)
        defer { statement.reset() }
        var keys = Set<String>()
        while try statement.step() {
            for info in try statement.withBlob(0, { try RowCodec.decodeAttachments($0) }) { keys.insert(info.blobKey) }
        }
        return keys
    }

    // MARK: - Validation

    /// Checks a document id: non-empty, at most `StoreLimits.maxDocIDBytes`, no NUL. Swift strings are always
    /// valid UTF-8; the server must reject invalid UTF-8 while decoding (see `validateDocID(bytes:)`).
    public static func validateDocID(_ id: String) throws(StoreError) {
        guard !id.isEmpty else { throw .invalidDocID("Document id must not be empty") }
        guard id.utf8.count <= StoreLimits.maxDocIDBytes else { throw .invalidDocID("Document id is too long") }
        guard !id.utf8.contains(0) else { throw .invalidDocID("Document id must not contain NUL") }
    }

    /// Checks raw document id bytes (from a URL or JSON) and decodes them.
    /// - Throws: `.invalidDocID` for invalid UTF-8 or the checks of `validateDocID(_:)`.
    public static func validateDocID(bytes: [UInt8]) throws(StoreError) -> String {
        guard let id = String(validating: bytes, as: UTF8.self) else {
            throw .invalidDocID("Document id must be valid UTF-8")
        }
        try validateDocID(id)
        return id
    }

    static func validateCommon(_ write: RevisionWrite) throws(StoreError) {
        try validateDocID(write.docID)
        guard write.body.count <= StoreLimits.maxDocumentBytes else { throw .documentTooLarge(write.docID) }
        guard write.attachments.count <= StoreLimits.maxAttachmentsPerRevision else {
            throw .badRequest("too many attachments")
        }
        for attachment in write.attachments {
            let count = attachment.name.utf8.count
            guard count > 0, count <= StoreLimits.maxAttachmentNameBytes else {
                throw .badRequest("invalid attachment name")
            }
        }
    }
}
