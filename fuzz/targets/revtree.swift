import RevTree

/// Target: revision-tree merge and stemming (`couch_key_tree` semantics).
///
/// Input: a true history (each revision's parent and deletion flag, hashes of both CouchDB kinds: 32 hex digits
/// and opaque text), then replicated paths cut from it (a leaf and a length), then a `_revs_limit`. Invariants:
/// - merging never loses a leaf: each old leaf is still a leaf or is an ancestor in the merged path;
/// - the leaves are exactly the merged revisions no merged path names as an ancestor;
/// - merging the same path twice changes nothing (the result says unchanged and the tree is equal);
/// - the tree, hence the winner and conflicts, is independent of merge order (forward against reverse or rotated,
///   one of the two per execution);
/// - rebuilding the tree from its rows gives the same tree;
/// - stemming keeps every leaf and the winner, keeps exactly the revisions within the limit of some leaf, and
///   keeps a parent link exactly when some leaf's newest `limit` revisions hold both ends, and resending the
///   surviving leaves' paths then stemming again changes nothing.
func fuzzOne(_ bytes: [UInt8]) {
    var reader = Reader(bytes: bytes)
    let history = History(&reader)
    var paths: [[RevID]] = []
    let limit = 1 + Int(reader.next() % 6)
    while !reader.atEnd && paths.count < 40 {
        let leaf = history.revs[Int(reader.next()) % history.revs.count]
        paths.append(history.path(to: leaf, length: 1 + Int(reader.next() % 12)))
    }
    guard !paths.isEmpty else { return }

    var tree = RevTree()
    var ancestors = Set<RevID>()
    var merged = Set<RevID>()
    for path in paths {
        let before = tree
        let oldLeaves = leafSet(tree)
        let result = mustMerge(&tree, path, history)
        require(result.changed == (tree != before), "changed=\(result.changed) but tree \(tree != before)")
        let newLeaves = leafSet(tree)
        require(oldLeaves.subtracting(newLeaves).isSubset(of: Set(path.dropFirst())), "a leaf was lost")
        require(tree.contains(path[0]), "the merged leaf is missing")
        let once = tree
        let again = mustMerge(&tree, path, history)
        require(!again.changed && tree == once, "merging the same path twice changed the tree")
        merged.formUnion(path)
        ancestors.formUnion(path.dropFirst())
    }
    require(Set(tree.nodes.map(\.rev)) == merged, "merged revisions differ from the tree's")
    require(Set(tree.leaves.map(\.rev)) == merged.subtracting(ancestors), "leaves differ from the reference")
    let rows = tree.canonicalRows.map { (rev: $0.rev, parent: $0.parent, deleted: $0.deleted, hasBody: $0.hasBody) }
    require(RevTree(rows: rows) == tree, "rebuilt from rows differs")

    // One other order per execution, chosen by the input (see `inputChoice`): reversed, or rotated by the last byte.
    let rotation = Int(bytes.last ?? 0) % paths.count
    let order =
        inputChoice(bytes, among: 2) == 0 ? Array(paths.reversed()) : Array(paths[rotation...] + paths[..<rotation])
    var other = RevTree()
    for path in order { _ = mustMerge(&other, path, history) }
    require(other == tree, "merge order changed the tree:\n\(tree)\nvs\n\(other)")
    require(other.winner?.rev == tree.winner?.rev && other.conflicts == tree.conflicts, "winner depends on order")

    var stemmed = tree
    let removed = stemmed.stem(limit: limit)
    require(Set(stemmed.leaves.map(\.rev)) == Set(tree.leaves.map(\.rev)), "stemming lost a leaf")
    require(stemmed.winner?.rev == tree.winner?.rev, "stemming changed the winner")
    var within = Set<RevID>()
    for leaf in tree.leaves { within.formUnion(tree.history(of: leaf.rev).prefix(limit)) }
    require(Set(stemmed.nodes.map(\.rev)) == within, "stemming kept the wrong revisions")
    require(Set(removed) == merged.subtracting(within), "stem's removed list is wrong")
    // A link survives exactly when some leaf's newest `limit` revisions hold both ends (CouchDB stems each leaf's
    // path and merges the pieces back, so two pieces can rejoin into a branch longer than `limit`).
    var keptParent: [RevID: RevID] = [:]
    for leaf in tree.leaves {
        let newest = Array(tree.history(of: leaf.rev).prefix(limit))
        for (child, parent) in zip(newest, newest.dropFirst()) { keptParent[child] = parent }
    }
    for node in stemmed.nodes {
        require(stemmed.parent(of: node.rev) == keptParent[node.rev], "wrong link kept for \(node.rev)")
    }
    var resent = stemmed
    let leaves = Set(tree.leaves.map(\.rev))
    for path in paths where leaves.contains(path[0]) {
        _ = mustMerge(&resent, path, history)
        resent.stem(limit: limit)
    }
    require(resent == stemmed, "resending after stemming changed the tree:\n\(stemmed)\nvs\n\(resent)")
}

/// The leaves as a set, without `leaves`' winner sort (the final checks use `leaves` itself).
func leafSet(_ tree: RevTree) -> Set<RevID> { Set(tree.nodes.lazy.filter(\.isLeaf).map(\.rev)) }

func mustMerge(_ tree: inout RevTree, _ path: [RevID], _ history: History) -> RevTree.MergeResult {
    do {
        return try tree.merge(path: path, deleted: history.deleted[path[0]] ?? false)
    } catch {
        fail("valid path refused: \(error) \(path)")
    }
}

struct Reader {
    let bytes: [UInt8]
    var index = 0
    var atEnd: Bool { index >= bytes.count }

    mutating func next() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }
}

/// The "true" history the paths are cut from: every revision's real parent, so all paths agree with each other.
struct History {
    var revs: [RevID] = []
    var parent: [RevID: RevID] = [:]
    var deleted: [RevID: Bool] = [:]

    init(_ reader: inout Reader) {
        let count = 1 + Int(reader.next() % 48)
        for index in 0..<count {
            let shape = reader.next()
            let parentRev: RevID? = index == 0 || shape % 7 == 0 ? nil : revs[Int(shape) % index]
            let pos = parentRev.map { $0.pos + 1 } ?? 1 + Int(shape >> 6)
            let kind = reader.next()
            let hash: String
            switch kind % 4 {
            case 0:
                // 32 hex digits, CouchDB's md5 form; the first byte chosen by the input to steer the order.
                let head = String(kind, radix: 16)
                let tail = String(index, radix: 16)
                hash =
                    String(repeating: "0", count: 2 - head.count) + head
                    + String(repeating: "0", count: 30 - tail.count) + tail
            case 1: hash = "z\(index)"
            case 2: hash = String(repeating: "f", count: 31 - String(index).count) + "g\(index)"
            default: hash = "\(Character(Unicode.Scalar(0x61 + kind % 26)))-\(index)"
            }
            let rev = RevID(pos: pos, hash: hash)
            revs.append(rev)
            if let parentRev { parent[rev] = parentRev }
            deleted[rev] = reader.next() & 1 == 1
        }
    }

    func path(to leaf: RevID, length: Int) -> [RevID] {
        var out = [leaf]
        while out.count < length, let up = parent[out[out.count - 1]] { out.append(up) }
        return out
    }
}
