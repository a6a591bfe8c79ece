import RevTreeTestSupport
import Testing

@testable import RevTree

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
        // A rev is linked to its parent exactly when some merged path carried the two one after the other;
        // otherwise it is a root.
        var carriedWithParent = Set<RevID>()
        for path in paths { carriedWithParent.formUnion(zip(path, path.dropFirst()).map(\.0)) }
        for node in tree.nodes {
            if carriedWithParent.contains(node.rev) {
                let actual = try #require(tree.parent(of: node.rev), "\(node.rev) lost the link to its parent")
                #expect(actual == history.parent[node.rev])
            } else {
                #expect(tree.parent(of: node.rev) == nil, "\(node.rev) got a parent no path gave it")
            }
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
