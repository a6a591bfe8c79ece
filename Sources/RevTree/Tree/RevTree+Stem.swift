extension RevTree {
    /// Cuts every root-to-leaf path to its newest `limit` revisions (`couch_key_tree:stem/2`).
    ///
    /// A revision survives when it is fewer than `limit` generations above some leaf, so no leaf is ever lost;
    /// survivors whose parent was cut become roots. As in CouchDB (which stems each leaf's path and merges the
    /// pieces back), a parent link survives only if some leaf's stemmed path holds both ends; two stemmed paths can
    /// still rejoin where they share a revision, so a branch may end up longer than `limit` (CouchDB's too; found by
    /// fuzz/targets/revtree.swift). A limit at or above the tree's depth changes nothing.
    /// - Parameter limit: `_revs_limit`, at least 1 (smaller values are treated as 1).
    /// - Returns: the removed revisions.
    @discardableResult
    public mutating func stem(limit: Int) -> [RevID] {
        let limit = max(1, limit)
        // remaining[i] = how many more generations above node i a leaf still reaches; walking stops early where a
        // nearer leaf already reached further.
        var remaining = [Int](repeating: 0, count: nodes.count)
        for leaf in nodes.indices where nodes[leaf].isLeaf {
            var current: Int? = leaf
            var budget = limit
            while let index = current, budget > remaining[index] {
                remaining[index] = budget
                budget -= 1
                current = nodes[index].parent
            }
        }
        let keep = remaining.map { $0 > 0 }
        let cut = nodes.indices.map { nodes[$0].parent != nil && remaining[$0] == 1 }
        guard keep.contains(false) || cut.contains(true) else { return [] }
        let removed = nodes.indices.filter { !keep[$0] }.map { nodes[$0].rev }
        rebuild(keeping: keep, cuttingParentOf: cut)
        return removed
    }
}
