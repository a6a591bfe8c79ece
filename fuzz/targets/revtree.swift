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
    var cuts: [Cut] = []
    let limit = 1 + Int(reader.next() % 6)
    while !reader.atEnd && cuts.count < 40 {
        let leaf = Int(reader.next()) % history.revs.count
        cuts.append(history.cut(to: leaf, length: 1 + Int(reader.next() % 12)))
    }
    guard !cuts.isEmpty else { return }

    // The reference sets are kept by position in the history (no hashing of revisions per merge).
    var tree = RevTree()
    var isAncestor = [Bool](repeating: false, count: history.revs.count)
    var isMerged = isAncestor
    for cut in cuts {
        let path = cut.path
        let before = tree
        let oldLeaves = tree.nodes.filter(\.isLeaf).map(\.rev)
        let result = mustMerge(&tree, cut)
        require(result.changed == (tree != before), "changed=\(result.changed) but tree \(tree != before)")
        for rev in oldLeaves where !tree.isLeaf(rev) {
            require(path.dropFirst().contains(rev), "a leaf was lost: \(rev)")
        }
        require(tree.contains(path[0]), "the merged leaf is missing")
        let once = tree
        let again = mustMerge(&tree, cut)
        require(!again.changed && tree == once, "merging the same path twice changed the tree")
        for index in cut.indices { isMerged[index] = true }
        for index in cut.indices.dropFirst() { isAncestor[index] = true }
    }
    let merged = Set(history.revs.indices.filter { isMerged[$0] }.map { history.revs[$0] })
    let referenceLeaves = Set(history.revs.indices.filter { isMerged[$0] && !isAncestor[$0] }.map { history.revs[$0] })
    require(Set(tree.nodes.map(\.rev)) == merged, "merged revisions differ from the tree's")
    require(Set(tree.leaves.map(\.rev)) == referenceLeaves, "leaves differ from the reference")
    let rows = tree.canonicalRows.map { (rev: $0.rev, parent: $0.parent, deleted: $0.deleted, hasBody: $0.hasBody) }
    require(RevTree(rows: rows) == tree, "rebuilt from rows differs")

    // One other order per execution, chosen by the input (see `inputChoice`): reversed, or rotated by the last byte.
    let rotation = Int(bytes.last ?? 0) % cuts.count
    let order =
        inputChoice(bytes, among: 2) == 0 ? Array(cuts.reversed()) : Array(cuts[rotation...] + cuts[..<rotation])
    var other = RevTree()
    for cut in order { _ = mustMerge(&other, cut) }
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
    for cut in cuts where leaves.contains(cut.path[0]) {
        _ = mustMerge(&resent, cut)
        resent.stem(limit: limit)
    }
    require(resent == stemmed, "resending after stemming changed the tree:\n\(stemmed)\nvs\n\(resent)")
}

func mustMerge(_ tree: inout RevTree, _ cut: Cut) -> RevTree.MergeResult {
    do {
        return try tree.merge(path: cut.path, deleted: cut.deleted)
    } catch {
        fail("valid path refused: \(error) \(cut.path)")
    }
}

/// A replicated path cut from the history: its revisions (leaf first), their positions in the history, and
/// whether the leaf is a deletion.
struct Cut {
    var path: [RevID]
    var indices: [Int]
    var deleted: Bool
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
    /// By position in `revs`: the parent's position (nil for a root) and the deletion flag.
    var parent: [Int?] = []
    var deleted: [Bool] = []

    init(_ reader: inout Reader) {
        let count = 1 + Int(reader.next() % 48)
        for index in 0..<count {
            let shape = reader.next()
            let parentIndex: Int? = index == 0 || shape % 7 == 0 ? nil : Int(shape) % index
            let pos = parentIndex.map { revs[$0].pos + 1 } ?? 1 + Int(shape >> 6)
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
            parent.append(parentIndex)
            deleted.append(reader.next() & 1 == 1)
        }
    }

    /// The path from the revision at `leaf` up to `length` revisions long.
    func cut(to leaf: Int, length: Int) -> Cut {
        var indices = [leaf]
        while indices.count < length, let up = parent[indices[indices.count - 1]] { indices.append(up) }
        return Cut(path: indices.map { revs[$0] }, indices: indices, deleted: deleted[leaf])
    }
}
