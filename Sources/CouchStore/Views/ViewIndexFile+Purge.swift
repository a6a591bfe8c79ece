extension ViewIndexFile {
    /// Removes every row of `docIDs` and records `purgeSeq`, the database's purge seq they bring this index to,
    /// in one transaction (`couch_index_updater`'s purge step). A purged document that still has revisions was
    /// moved to a new seq by its purge, so the next update maps it again; one that is gone keeps no rows.
    public func forget(_ docIDs: [String], purgeSeq: Int, chunks: (any ViewChunkReducer)? = nil) throws {
        if !docIDs.isEmpty {
            try apply(docIDs.map { (docID: $0, emits: [], fresh: false) }, seq: updateSeq, chunks: chunks)
        }
        try setPurgeSeq(purgeSeq, emptying: false)
    }

    /// Empties the index and records `purgeSeq`, so the next update builds it from sequence 0: for an index
    /// whose purge seq the database's purge log no longer reaches (`_purged_infos_limit` trimmed it).
    public func reset(purgeSeq: Int) throws {
        try setPurgeSeq(purgeSeq, emptying: true)
    }

    private func setPurgeSeq(_ purgeSeq: Int, emptying: Bool) throws {
        try write { connection in
            if emptying {
                try connection.execute("DELETE FROM rows; DELETE FROM view_counts; DELETE FROM chunks")
                try connection.run("UPDATE meta SET update_seq = 0, chunks_valid = 0 WHERE id = 1")
            }
            try connection.run("UPDATE meta SET purge_seq = ? WHERE id = 1", [.int(purgeSeq)])
            return emptying ? false : chunksValid
        }
        updatePublished(purgeSeq: purgeSeq, emptied: emptying)
    }
}
