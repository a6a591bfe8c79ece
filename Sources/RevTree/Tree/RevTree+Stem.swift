extension RevTree {
    /// Cuts every root-to-leaf path to its newest `limit` revisions (`couch_key_tree:stem/2`).
    ///
    /// A revision survives when it is fewer than `limit` generations above some leaf, so no leaf is ever lost;
    /// survivors whose parent was cut become roots. A limit at or above the tree's depth changes nothing.
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
        guard keep.contains(false) else { return [] }
        let removed = nodes.indices.filter { !keep[$0] }.map { nodes[$0].rev }
        rebuild(keeping: keep)
        return removed
    }
}
