import RevTree

/// `_purge`: revisions removed as if never written (`couch_db:purge_docs`), and the log of purges that lets the
/// indexes built on the database forget them too (`_purged_infos_limit` of them are kept).
extension Database {
    /// One document's purge request and what it removed.
    public struct PurgeResult: Sendable, Equatable {
        public var docID: String
        /// The leaves removed, in the order they were asked for (unknown and non-leaf revs are left out).
        public var purged: [RevID]
    }

    /// What a purge did: each document's result, in request order, and the blob keys still referenced afterwards
    /// (the blob store may delete every other blob, as after compaction).
    public struct PurgeOutcome: Sendable {
        public var results: [PurgeResult]
        public var referencedBlobKeys: Set<String>
    }

    /// The default and the bounds of `_purged_infos_limit` (CouchDB's `purge_infos_limit`, 1000).
    public static let defaultPurgedInfosLimit = 1000

    /// Purges, in one durable transaction, the named leaves of each document and every revision only they
    /// reached. A document left with revisions moves to a new seq, as an update would (its `_changes` row shows
    /// what remains); one left with none is removed with its bodies, from `_changes` and the counts alike. Each
    /// request entry, even one that purged nothing, takes the next purge seq and a row of the purge log (CouchDB
    /// records a purge info per entry); `update_seq` moves on whenever anything was purged, so index updaters
    /// and feeds that wait on it wake up. Nothing of this replicates: the purged revisions simply are not there.
    /// An id no document can have (empty, `_bad`) purges nothing, as in CouchDB.
    public func purge(_ requests: [(docID: String, revs: [RevID])]) throws -> PurgeOutcome {
        // A purged design document takes its validation function with it: caches of them must look again.
        let touchesDesign = requests.contains { $0.docID.utf8.starts(with: "_design/".utf8) }
        defer { if touchesDesign { designDocumentsChanged() } }
        return try write { connection in
            var meta = try Meta.load(connection)
            let startSeq = meta.updateSeq
            var results = [PurgeResult]()
            results.reserveCapacity(requests.count)
            var changed = false
            for request in requests {
                let purged = try Database.purge(request.docID, request.revs, connection, &meta)
                changed = changed || !purged.isEmpty
                meta.purgeSeq += 1
                try connection.run(
                    "INSERT INTO purge_log (purge_seq, doc_id, revs) VALUES (?, ?, ?)",
                    [
                        .int(meta.purgeSeq), .text(request.docID),
                        .text(request.revs.map(\.description).joined(separator: ",")),
                    ])
                results.append(PurgeResult(docID: request.docID, purged: purged))
            }
            if changed, meta.updateSeq == startSeq { meta.updateSeq += 1 }
            try meta.save(connection)
            try connection.run("UPDATE db_meta SET purge_seq = ? WHERE id = 1", [.int(meta.purgeSeq)])
            try connection.run(
                """
                DELETE FROM purge_log WHERE purge_seq <= ?
                  - (SELECT purged_infos_limit FROM db_meta WHERE id = 1)
                """, [.int(meta.purgeSeq)])
            return PurgeOutcome(results: results, referencedBlobKeys: try Database.blobKeys(connection))
        }
    }

    /// Purges one document inside the caller's transaction.
    private static func purge(_ id: String, _ revs: [RevID], _ connection: SQLiteConnection, _ meta: inout Meta)
        throws -> [RevID]
    {
        guard !revs.isEmpty, let existing = try loadDocument(id, connection) else { return [] }
        var tree = existing.tree
        let purged = tree.purge(leaves: revs)
        guard !purged.isEmpty else { return [] }
        let before = existing.stored
        for (index, node) in before.tree.nodes.enumerated() where !tree.contains(node.rev) {
            if let body = before.bodies[index], body.seq != existing.seq { try deleteBody(seq: body.seq, connection) }
        }
        meta.externalSize -= before.leafBodyBytes
        if existing.deleted { meta.docDelCount -= 1 } else { meta.docCount -= 1 }
        guard let winner = tree.winner else {
            try connection.run("DELETE FROM documents WHERE seq = ?", [.int(existing.seq)])
            return purged
        }
        let stored = StoredTree(tree: tree, bodies: tree.nodes.map { before.body(of: $0.rev) })
        // The row's own body moves to `bodies` when a remaining revision still has it; the row then holds none.
        if stored.bodies.contains(where: { $0?.seq == existing.seq }) {
            let keep = try connection.statement(.keepBody)
            defer { keep.rewind() }
            try keep.bind(1, existing.seq)
            while try keep.step() {}
        }
        meta.updateSeq += 1
        try connection.run(
            "UPDATE documents SET seq = ?, deleted = ?, tree = ?, body = NULL, attachments = NULL WHERE seq = ?",
            [
                .int(meta.updateSeq), .int(winner.deleted ? 1 : 0), .blob(RowCodec.encodeTree(stored)),
                .int(existing.seq),
            ])
        meta.externalSize += stored.leafBodyBytes
        if winner.deleted { meta.docDelCount += 1 } else { meta.docCount += 1 }
        return purged
    }

    /// `GET /db/_purged_infos_limit`.
    public func purgedInfosLimit() throws -> Int {
        try read { try $0.scalarInt("SELECT purged_infos_limit FROM db_meta WHERE id = 1") ?? 0 }
    }

    /// `PUT /db/_purged_infos_limit`: how many purge log rows are kept; older ones are dropped at once.
    /// - Throws: `StoreError.badRequest` unless `limit` is positive.
    public func setPurgedInfosLimit(_ limit: Int) throws {
        guard limit > 0 else { throw StoreError.badRequest("`purged_infos_limit` must be positive integer") }
        try write { connection in
            try connection.run("UPDATE db_meta SET purged_infos_limit = ? WHERE id = 1", [.int(limit)])
            try connection.run(
                "DELETE FROM purge_log WHERE purge_seq <= (SELECT purge_seq FROM db_meta WHERE id = 1) - ?",
                [.int(limit)])
        }
    }

    /// The purges an index at `since` has not seen: the ids purged after it, oldest first, with the purge seq
    /// they bring the index to. nil when the log no longer reaches back to `since` (trimmed by
    /// `_purged_infos_limit`): the index must be rebuilt from scratch.
    public func purgedDocuments(since: Int) throws -> (ids: [String], purgeSeq: Int)? {
        try read { connection in
            let current = try connection.scalarInt("SELECT purge_seq FROM db_meta WHERE id = 1") ?? 0
            guard current > since else { return ([], current) }
            let oldest = try connection.scalarInt("SELECT min(purge_seq) FROM purge_log") ?? (current + 1)
            guard oldest <= since + 1 else { return nil }
            let rows = try connection.prepare("SELECT doc_id FROM purge_log WHERE purge_seq > ? ORDER BY purge_seq")
            defer { rows.reset() }
            try rows.bind([.int(since)])
            var ids = [String]()
            var seen = Set<String>()
            while try rows.step() {
                let id = rows.text(0)
                if seen.insert(id).inserted { ids.append(id) }
            }
            return (ids, current)
        }
    }
}
