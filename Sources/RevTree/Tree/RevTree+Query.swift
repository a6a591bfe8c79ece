extension RevTree {
    /// The winner rule, in one place: leaves ordered by (not deleted, pos, hash bytes), highest first
    /// (`couch_doc:to_doc_info_path`, PouchDB `winningRev.js`).
    public static func winsOver(_ lhs: (rev: RevID, deleted: Bool), _ rhs: (rev: RevID, deleted: Bool)) -> Bool {
        if lhs.deleted != rhs.deleted { return !lhs.deleted }
        return rhs.rev < lhs.rev
    }

    /// All leaves, winner first.
    public var leaves: [Node] {
        nodes.filter(\.isLeaf).sorted { RevTree.winsOver(($0.rev, $0.deleted), ($1.rev, $1.deleted)) }
    }

    /// The winning leaf, nil for an empty tree.
    public var winner: Node? {
        var best: Node?
        for node in nodes where node.isLeaf {
            if let current = best, !RevTree.winsOver((node.rev, node.deleted), (current.rev, current.deleted)) {
                continue
            }
            best = node
        }
        return best
    }

    /// Whether the document is deleted (its winner is a deletion).
    public var isDeleted: Bool { winner?.deleted ?? false }

    /// `_conflicts`: live leaves other than the winner, winner order.
    public var conflicts: [RevID] {
        Array(leaves.dropFirst().filter { !$0.deleted }.map(\.rev))
    }

    /// `_deleted_conflicts`: deleted leaves other than the winner, winner order.
    public var deletedConflicts: [RevID] {
        Array(leaves.dropFirst().filter(\.deleted).map(\.rev))
    }

    /// Whether `rev` is a leaf of this tree.
    public func isLeaf(_ rev: RevID) -> Bool { node(rev)?.isLeaf ?? false }

    /// The leaves that descend from `rev` (`rev` itself when it is a leaf), winner first: what `latest=true`
    /// turns a requested revision into. Empty when `rev` is not in the tree.
    public func leaves(descendingFrom rev: RevID) -> [RevID] {
        guard contains(rev) else { return [] }
        return leaves.filter { history(of: $0.rev).contains(rev) }.map(\.rev)
    }

    /// What `latest=true` reads for a requested `rev`: the leaves descending from it, or `rev` itself when it is
    /// not in the tree (then it is reported missing as it was asked).
    public func latest(of rev: RevID) -> [RevID] {
        let leaves = leaves(descendingFrom: rev)
        return leaves.isEmpty ? [rev] : leaves
    }

    /// The stored history of `rev`: `rev` first, then its ancestors back to its root (for `_revisions`).
    public func history(of rev: RevID) -> [RevID] {
        var out = [RevID]()
        var current = index(of: rev)
        while let index = current {
            out.append(nodes[index].rev)
            current = nodes[index].parent
        }
        return out
    }

    /// Status of a revision in `_revs_info`.
    public enum RevStatus: String, Sendable {
        case available, missing, deleted
    }

    /// `_revs_info` for `rev`: its history with the status of each revision.
    public func revsInfo(of rev: RevID) -> [(rev: RevID, status: RevStatus)] {
        history(of: rev).compactMap { rev in
            node(rev).map { node in (rev, node.deleted ? .deleted : (node.hasBody ? .available : .missing)) }
        }
    }

    /// The revs from `revs` this tree does not hold (stemmed revisions count as missing), without duplicates, in
    /// request order (`couch_key_tree:find_missing`).
    public func missing(_ revs: [RevID]) -> [RevID] {
        // Real requests name a few revs per document: those are checked for repeats by scanning, not hashing.
        if revs.count <= 8 {
            var out = [RevID]()
            for rev in revs where !contains(rev) && !out.contains(rev) { out.append(rev) }
            return out
        }
        var seen = Set<RevID>()
        return revs.filter { !contains($0) && seen.insert($0).inserted }
    }

    /// `possible_ancestors` for `_revs_diff`: the leaves (live or deleted) whose generation is lower than that of
    /// at least one missing rev (`couch_db:find_missing`), winner order.
    public func possibleAncestors(for missing: [RevID]) -> [RevID] {
        guard let highest = missing.map(\.pos).max() else { return [] }
        return leaves.filter { $0.rev.pos < highest }.map(\.rev)
    }
}
