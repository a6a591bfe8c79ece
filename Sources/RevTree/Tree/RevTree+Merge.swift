extension RevTree {
    /// How a merged path related to the tree (`couch_key_tree:merge/2`'s result).
    public enum MergeOutcome: Sendable, Equatable {
        /// The path's leaf is new and extends an existing leaf (or the tree was empty).
        case newLeaf
        /// The path's leaf is new and starts a branch off an internal node, or a new root.
        case newBranch
        /// The path's leaf was already in the tree.
        case internalNode
    }

    /// What a merge did.
    public struct MergeResult: Sendable, Equatable {
        public var outcome: MergeOutcome
        /// Whether any node, link or value changed.
        public var changed: Bool
        /// Whether the path's leaf got the written value (it was new, or it was `?REV_MISSING` and a body arrived).
        public var leafValueSet: Bool
    }

    /// Merges one revision path, like `couch_key_tree:merge/2` followed by value preference for real bodies.
    ///
    /// The path overlaps the tree at its revision nearest the leaf that the tree already holds; new revisions below
    /// that point hang under it, revisions above it re-extend a stemmed root. A path sharing nothing becomes a new
    /// root. Merging the same path again changes nothing.
    /// - Parameters:
    ///   - path: leaf first, then consecutive ancestors (see `RevID.validate(path:)`).
    ///   - deleted: the leaf is a deletion.
    ///   - hasBody: the leaf carries a body (false only for tests of missing leaves).
    /// - Throws: `RevTreeError` if `path` is not a valid path.
    @discardableResult
    public mutating func merge(path: [RevID], deleted: Bool, hasBody: Bool = true) throws(RevTreeError) -> MergeResult {
        try RevID.validate(path: path)
        let overlap = path.firstIndex { contains($0) }
        var changed = false
        var leafValueSet = false
        let outcome: MergeOutcome
        switch overlap {
        case 0:
            outcome = .internalNode
            if let leaf = index(of: path[0]), !nodes[leaf].hasBody, hasBody {
                setValue(leaf, deleted: deleted, hasBody: true)
                changed = true
                leafValueSet = true
            }
            changed = extendAncestors(path, from: 0) || changed
        case let attach?:
            guard let attachIndex = index(of: path[attach]) else { preconditionFailure("overlap vanished") }
            outcome = nodes[attachIndex].isLeaf ? .newLeaf : .newBranch
            var parent = attachIndex
            for offset in stride(from: attach - 1, through: 0, by: -1) {
                let isLeaf = offset == 0
                parent = append(path[offset], parent: parent, deleted: isLeaf && deleted, hasBody: isLeaf && hasBody)
            }
            changed = true
            leafValueSet = true
            _ = extendAncestors(path, from: attach)
        case nil:
            outcome = isEmpty ? .newLeaf : .newBranch
            var parent: Int?
            for offset in stride(from: path.count - 1, through: 0, by: -1) {
                let isLeaf = offset == 0
                parent = append(path[offset], parent: parent, deleted: isLeaf && deleted, hasBody: isLeaf && hasBody)
            }
            changed = true
            leafValueSet = true
        }
        return MergeResult(outcome: outcome, changed: changed, leafValueSet: leafValueSet)
    }

    /// Walks up from `path[start]` (which the tree holds), adding the path's older ancestors where the tree has
    /// none (a stemmed root re-extended by a longer history). Stops where a stored link disagrees with the path.
    private mutating func extendAncestors(_ path: [RevID], from start: Int) -> Bool {
        var changed = false
        var offset = start
        guard var current = index(of: path[offset]) else { return false }
        while offset + 1 < path.count {
            let next = path[offset + 1]
            if let parent = nodes[current].parent {
                guard nodes[parent].rev == next else { return changed }
                current = parent
            } else if let existing = index(of: next) {
                link(current, to: existing)
                changed = true
                current = existing
            } else {
                let added = append(next, parent: nil, deleted: false, hasBody: false)
                link(current, to: added)
                changed = true
                current = added
            }
            offset += 1
        }
        return changed
    }
}
