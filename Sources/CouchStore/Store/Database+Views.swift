import RevTree

extension Database {
    /// One changed document as a view updater needs it: its feed row, its tree (for `_conflicts`) and its winning
    /// revision with body (nil when the winner is deleted).
    public struct WinnerChange: Sendable {
        public var change: ChangeRow
        public var info: DocumentInfo
        public var winner: StoredRevision?
    }

    /// Up to `limit` documents changed after `since`, by seq, each with its winning revision, read in one
    /// transaction: a view update over 100,000 documents costs one read per page, not two per document.
    public func winnerChanges(since: Int, limit: Int) throws -> [WinnerChange] {
        try read { connection in
            let rows = try connection.statement(.changesAscending)
            defer { rows.rewind() }
            try rows.bind(1, since)
            var out: [WinnerChange] = []
            var trees: [StoredTree] = []
            while out.count < limit, try rows.step() {
                let stored = try rows.withBlob(3) { try RowCodec.decodeTree($0) }
                let id = rows.text(1)
                guard let winner = stored.tree.winner,
                    let info = Database.documentInfo(id: id, seq: rows.int(0), tree: stored.tree)
                else { continue }
                let change = ChangeRow(
                    seq: rows.int(0), id: id, deleted: rows.int(2) != 0, winner: winner.rev,
                    leaves: info.leaves)
                out.append(WinnerChange(change: change, info: info, winner: nil))
                trees.append(stored)
            }
            // Bodies are read once the page is collected, with the `.body` statement.
            for index in out.indices where !out[index].change.deleted {
                out[index].winner = try Database.storedRevision(out[index].change.winner, of: trees[index], connection)
            }
            return out
        }
    }
}
