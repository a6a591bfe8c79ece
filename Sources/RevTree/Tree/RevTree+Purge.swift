extension RevTree {
    /// Removes the leaves named in `revs` and every revision only they reached (`couch_key_tree:remove_leafs/2`):
    /// the tree is what the paths of its remaining leaves make. A rev that is not a leaf (an ancestor, or one the
    /// tree does not hold) is ignored, as CouchDB ignores it: purge removes branches from the leaf up, never the
    /// middle of a history. Purging every leaf empties the tree.
    /// - Returns: the purged leaves, in the order `revs` named them, each once.
    @discardableResult
    public mutating func purge(leaves revs: [RevID]) -> [RevID] {
        var purged: [RevID] = []
        var removedLeaf = [Bool](repeating: false, count: nodes.count)
        for rev in revs {
            guard let index = index(of: rev), nodes[index].isLeaf, !removedLeaf[index] else { continue }
            removedLeaf[index] = true
            purged.append(rev)
        }
        guard !purged.isEmpty else { return [] }
        // A revision stays when a remaining leaf reaches it; each walk stops where an earlier one already went.
        var keep = [Bool](repeating: false, count: nodes.count)
        for leaf in nodes.indices where nodes[leaf].isLeaf && !removedLeaf[leaf] {
            var current: Int? = leaf
            while let index = current, !keep[index] {
                keep[index] = true
                current = nodes[index].parent
            }
        }
        rebuild(keeping: keep, cuttingParentOf: [Bool](repeating: false, count: nodes.count))
        return purged
    }
}
