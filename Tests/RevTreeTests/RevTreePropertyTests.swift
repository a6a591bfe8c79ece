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
/// have been merged. Its leaves and winner are computed the obvious way, without any of RevTree's comparisons.
struct ReferenceHistory {
    var parent: [RevID: RevID] = [:]
    var deleted: [RevID: Bool] = [:]
    var all: [RevID] = []

    init(size: Int, using rng: inout SplitMix64) {
        for index in 0..<size {
            let parentRev: RevID? =
                (index == 0 || Int.random(in: 0..<8, using: &rng) == 0)
                ? nil : all.randomElement(using: &rng)
            // Text hashes, and every third one 32 hex digits (compared as its 16 bytes, against text ones too).
            let rev = RevID(pos: (parentRev?.pos ?? 0) + 1, hash: index % 3 == 0 ? Self.hexHash(index) : "\(index)h")
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

    /// 32 lowercase hex digits made from `index`.
    static func hexHash(_ index: Int) -> String {
        let digits = String(UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
        let padded = String(repeating: "0", count: 16 - digits.count) + digits
        return padded + String(padded.reversed())
    }

    /// The binary CouchDB keeps for a hash (`couch_doc:parse_revid`): 32 hex digits are their 16 bytes, anything
    /// else is its UTF-8 text.
    static func binary(_ hash: String) -> [UInt8] {
        let text = Array(hash.utf8)
        let nibbles = text.compactMap { UInt8(String(UnicodeScalar($0)), radix: 16) }
        guard text.count == 32, nibbles.count == 32 else { return text }
        return stride(from: 0, to: 32, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    /// CouchDB's winner rule written out: a live leaf beats a deleted one, then the higher generation wins, then
    /// the greater hash binary, compared byte by byte as Erlang compares binaries (a proper prefix is smaller).
    static func beats(_ a: (rev: RevID, deleted: Bool), _ b: (rev: RevID, deleted: Bool)) -> Bool {
        if a.deleted != b.deleted { return b.deleted }
        if a.rev.pos != b.rev.pos { return a.rev.pos > b.rev.pos }
        let (x, y) = (binary(a.rev.hash), binary(b.rev.hash))
        for (p, q) in zip(x, y) where p != q { return p > q }
        return x.count > y.count
    }

    func winner(of merged: Set<RevID>) -> RevID? {
        let parents = Set(merged.compactMap { parent[$0] }.filter(merged.contains))
        var best: RevID?
        for leaf in merged.subtracting(parents) {
            guard let current = best else {
                best = leaf
                continue
            }
            if Self.beats((leaf, deleted[leaf] ?? false), (current, deleted[current] ?? false)) { best = leaf }
        }
        return best
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
