import Testing

@testable import RevTree

/// Deterministic generator so failures reproduce from the seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The reference model: a "true" history (every rev's real parent and deletion flag), and the set of revs that
/// have been merged. Its leaves and winner are computed the obvious way.
struct ReferenceHistory {
    var parent: [RevID: RevID] = [:]
    var deleted: [RevID: Bool] = [:]
    var all: [RevID] = []

    init(size: Int, using rng: inout SplitMix64) {
        for index in 0..<size {
            let parentRev: RevID? =
                (index == 0 || Int.random(in: 0..<8, using: &rng) == 0)
                ? nil : all.randomElement(using: &rng)
            let rev = RevID(pos: (parentRev?.pos ?? 0) + 1, hash: String(index, radix: 16) + "h")
            if let parentRev { parent[rev] = parentRev }
            deleted[rev] = Int.random(in: 0..<4, using: &rng) == 0
            all.append(rev)
        }
    }

    /// A path from `leaf` up at most `length` revisions.
    func path(to leaf: RevID, length: Int) -> [RevID] {
        var out = [leaf]
        while out.count < length, let up = parent[out[out.count - 1]] { out.append(up) }
        return out
    }

    func winner(of merged: Set<RevID>) -> RevID? {
        let parents = Set(merged.compactMap { parent[$0] }.filter(merged.contains))
        let leaves = merged.subtracting(parents)
        return leaves.max { RevTree.winsOver(($1, deleted[$1] ?? false), ($0, deleted[$0] ?? false)) }
    }
}

@Suite struct RevTreePropertyTests {
    static let seeds: [UInt64] = Array(1...40)

    @Test(arguments: seeds)
    func mergeMatchesReferenceIsIdempotentAndOrderIndependent(seed: UInt64) throws {
        var rng = SplitMix64(state: seed)
        let history = ReferenceHistory(size: Int.random(in: 1...40, using: &rng), using: &rng)
        var paths = [[RevID]]()
        for _ in 0..<Int.random(in: 1...30, using: &rng) {
            guard let leaf = history.all.randomElement(using: &rng) else { continue }
            paths.append(history.path(to: leaf, length: Int.random(in: 1...12, using: &rng)))
        }
        var tree = RevTree()
        var merged = Set<RevID>()
        for path in paths {
            try tree.merge(path: path, deleted: history.deleted[path[0]] ?? false)
            merged.formUnion(path)
        }
        #expect(Set(tree.nodes.map(\.rev)) == merged)
        for node in tree.nodes {
            let expected = history.parent[node.rev].flatMap { merged.contains($0) ? $0 : nil }
            // A parent is linked whenever some merged path carried both revs; otherwise the node is a root.
            if let actual = tree.parent(of: node.rev) { #expect(actual == expected) }
        }
        let snapshot = tree
        for path in paths {
            let result = try tree.merge(path: path, deleted: history.deleted[path[0]] ?? false)
            #expect(!result.changed)
        }
        #expect(tree == snapshot)
        var shuffled = RevTree()
        for path in paths.shuffled(using: &rng) {
            try shuffled.merge(path: path, deleted: history.deleted[path[0]] ?? false)
        }
        #expect(Set(shuffled.nodes.map(\.rev)) == merged)
        #expect(shuffled.winner?.rev == tree.winner?.rev)
        #expect(Set(shuffled.leaves.map(\.rev)) == Set(tree.leaves.map(\.rev)))
    }

    @Test(arguments: seeds)
    func winnerEqualsReferenceForFullPaths(seed: UInt64) throws {
        var rng = SplitMix64(state: seed &+ 1000)
        let history = ReferenceHistory(size: Int.random(in: 1...50, using: &rng), using: &rng)
        var tree = RevTree()
        var merged = Set<RevID>()
        for _ in 0..<Int.random(in: 1...25, using: &rng) {
            guard let leaf = history.all.randomElement(using: &rng) else { continue }
            let path = history.path(to: leaf, length: .max)  // full histories: links are exactly the truth
            try tree.merge(path: path, deleted: history.deleted[leaf] ?? false)
            merged.formUnion(path)
            #expect(tree.winner?.rev == history.winner(of: merged))
        }
    }

    @Test(arguments: seeds)
    func stemmingKeepsLeavesAndIsStableUnderResend(seed: UInt64) throws {
        var rng = SplitMix64(state: seed &+ 2000)
        let history = ReferenceHistory(size: Int.random(in: 2...60, using: &rng), using: &rng)
        var tree = RevTree()
        var paths = [[RevID]]()
        for _ in 0..<Int.random(in: 1...20, using: &rng) {
            guard let leaf = history.all.randomElement(using: &rng) else { continue }
            let path = history.path(to: leaf, length: .max)
            paths.append(path)
            try tree.merge(path: path, deleted: history.deleted[leaf] ?? false)
        }
        let depth = tree.nodes.map { tree.history(of: $0.rev).count }.max() ?? 0
        var unchanged = tree
        #expect(unchanged.stem(limit: depth).isEmpty)
        #expect(unchanged == tree)

        let limit = Int.random(in: 1...5, using: &rng)
        let leavesBefore = Set(tree.leaves.map(\.rev))
        let winnerBefore = tree.winner?.rev
        tree.stem(limit: limit)
        #expect(Set(tree.leaves.map(\.rev)) == leavesBefore)
        #expect(tree.winner?.rev == winnerBefore)
        // Every survivor is among the newest `limit` revisions of some leaf's history.
        var reachable = Set<RevID>()
        for leaf in tree.leaves { reachable.formUnion(tree.history(of: leaf.rev).prefix(limit)) }
        #expect(reachable == Set(tree.nodes.map(\.rev)))
        // Replicators resend: merging old paths then stemming again gives the same tree.
        let stemmed = tree
        // (Resending a path whose leaf was itself stemmed away re-adds it as a new root, in CouchDB too.)
        for path in paths where leavesBefore.contains(path[0]) {
            try tree.merge(path: path, deleted: history.deleted[path[0]] ?? false)
            tree.stem(limit: limit)
        }
        #expect(tree == stemmed)
    }
}
