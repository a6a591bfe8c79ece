/// The revision tree of one document, as a flat node array with parent indices (LiteCore's layout).
///
/// Semantics follow CouchDB's `couch_key_tree`: the tree may have several roots (after stemming or when a
/// replicated path shares no revision with it); a node without a body is `?REV_MISSING` (an ancestor named only by
/// `_revisions`, or a body dropped by compaction). Unlike `couch_key_tree`, a rev id appears at most once: rev ids
/// are content hashes over their parent, so two parents for one rev never occur in honest histories; when a path
/// contradicts a stored parent link, the stored link wins and the rest of that path is ignored.
///
/// The tree holds no bodies; the store keeps them and uses `hasBody` to know which exist.
public struct RevTree: Sendable, CustomStringConvertible {
    /// One revision.
    public struct Node: Sendable, Equatable {
        public var rev: RevID
        /// Index of the parent in `nodes`; nil for a root.
        public var parent: Int?
        /// The revision is a deletion (`_deleted: true`).
        public var deleted: Bool
        /// False for `?REV_MISSING`: an ancestor known only by id, or a compacted body.
        public var hasBody: Bool
        /// Number of children; 0 makes the node a leaf.
        public internal(set) var childCount: Int

        public var isLeaf: Bool { childCount == 0 }
    }

    /// All nodes, in no particular order: a parent may come after its children (a merge appends an ancestor it
    /// learns later), so follow `parent` indices, never positions in the array.
    public private(set) var nodes: [Node] = []
    /// Rev → index, kept only above `indexedTreeSize` nodes; smaller trees (nearly every document) are scanned,
    /// which is cheaper than hashing rev strings into a dictionary.
    private var indexByRev: [RevID: Int] = [:]
    /// Trees with more nodes than this keep `indexByRev`.
    static let indexedTreeSize = 16

    /// An empty tree (a document that does not exist yet).
    public init() {}

    /// Rebuilds a tree from stored rows.
    /// - Parameter rows: every stored revision with its parent's rev id (nil for roots). A parent that is not among
    ///   the rows makes the node a root (its ancestors were stemmed).
    public init(rows: [(rev: RevID, parent: RevID?, deleted: Bool, hasBody: Bool)]) {
        let sorted = rows.sorted { $0.rev.pos < $1.rev.pos }
        nodes.reserveCapacity(sorted.count)
        for row in sorted where index(of: row.rev) == nil {
            _ = append(
                row.rev, parent: row.parent.flatMap { index(of: $0) }, deleted: row.deleted,
                hasBody: row.hasBody)
        }
    }

    /// One node as the store serializes it: its parent given by position in the same list. `package`: the storage
    /// engine (CouchStore) writes and reads trees in this form; it is no API of the tree.
    package struct LinkedNode: Equatable {
        package var rev: RevID
        /// Position of the parent in the list; nil for a root.
        package var parent: Int?
        package var deleted: Bool
        package var hasBody: Bool

        package init(rev: RevID, parent: Int?, deleted: Bool, hasBody: Bool) {
            self.rev = rev
            self.parent = parent
            self.deleted = deleted
            self.hasBody = hasBody
        }
    }

    /// Rebuilds a tree from serialized nodes, with `nodes[i]` being `linked[i]` (so a caller can keep per-node
    /// data in a parallel array). Rev ids must be distinct. A parent position out of range, or whose generation is
    /// not lower, makes the node a root, so a damaged file can never make a walk up the tree loop.
    package init(linked: [LinkedNode]) {
        nodes.reserveCapacity(linked.count)
        for node in linked {
            nodes.append(Node(rev: node.rev, parent: nil, deleted: node.deleted, hasBody: node.hasBody, childCount: 0))
        }
        for (index, node) in linked.enumerated() {
            guard let parent = node.parent, linked.indices.contains(parent),
                linked[parent].rev.pos < node.rev.pos
            else { continue }
            nodes[index].parent = parent
            nodes[parent].childCount += 1
        }
        rebuildIndex()
    }

    /// The nodes as the store serializes them (`init(linked:)` rebuilds an equal tree with the same node order).
    package var linked: [LinkedNode] {
        nodes.map { LinkedNode(rev: $0.rev, parent: $0.parent, deleted: $0.deleted, hasBody: $0.hasBody) }
    }

    private mutating func rebuildIndex() {
        indexByRev.removeAll(keepingCapacity: true)
        guard nodes.count > RevTree.indexedTreeSize else { return }
        indexByRev.reserveCapacity(nodes.count)
        for index in nodes.indices { indexByRev[nodes[index].rev] = index }
    }

    /// Whether the tree has no revisions.
    public var isEmpty: Bool { nodes.isEmpty }

    /// The node for `rev`, if the tree holds it.
    public func node(_ rev: RevID) -> Node? {
        index(of: rev).map { nodes[$0] }
    }

    /// Whether the tree holds `rev`.
    public func contains(_ rev: RevID) -> Bool { index(of: rev) != nil }

    /// The parent rev of `rev`, if both are stored.
    public func parent(of rev: RevID) -> RevID? {
        guard let index = index(of: rev), let parent = nodes[index].parent else { return nil }
        return nodes[parent].rev
    }

    /// `package`: the store keeps per-node data (bodies, attachments) in arrays parallel to `nodes`.
    package func index(of rev: RevID) -> Int? {
        if nodes.count > RevTree.indexedTreeSize { return indexByRev[rev] }
        // Compare the cheap generation first; hashes only on a generation match.
        return nodes.firstIndex { $0.rev.pos == rev.pos && $0.rev.hash == rev.hash }
    }

    /// Appends a node; used by merge.
    mutating func append(_ rev: RevID, parent: Int?, deleted: Bool, hasBody: Bool) -> Int {
        if let parent { nodes[parent].childCount += 1 }
        let index = nodes.count
        nodes.append(Node(rev: rev, parent: parent, deleted: deleted, hasBody: hasBody, childCount: 0))
        if nodes.count == RevTree.indexedTreeSize + 1 {
            rebuildIndex()
        } else if nodes.count > RevTree.indexedTreeSize {
            indexByRev[rev] = index
        }
        return index
    }

    mutating func link(_ child: Int, to parent: Int) {
        precondition(nodes[child].parent == nil, "link over an existing parent")
        nodes[child].parent = parent
        nodes[parent].childCount += 1
    }

    mutating func setValue(_ index: Int, deleted: Bool, hasBody: Bool) {
        nodes[index].deleted = deleted
        nodes[index].hasBody = hasBody
    }

    /// Replaces the node array (after stemming), rebuilding indices and child counts.
    mutating func rebuild(keeping keep: [Bool], cuttingParentOf cut: [Bool]) {
        var newIndex = [Int?](repeating: nil, count: nodes.count)
        var kept = [Node]()
        kept.reserveCapacity(nodes.count)
        for (index, node) in nodes.enumerated() where keep[index] {
            newIndex[index] = kept.count
            var node = node
            if cut[index] { node.parent = nil }
            kept.append(node)
        }
        for index in kept.indices {
            kept[index].parent = kept[index].parent.flatMap { newIndex[$0] }
            kept[index].childCount = 0
        }
        for index in kept.indices {
            if let parent = kept[index].parent { kept[parent].childCount += 1 }
        }
        nodes = kept
        rebuildIndex()
    }

    /// Canonical content: every rev with its parent rev and value, sorted by rev. Two trees are equal when these are.
    public var canonicalRows: [CanonicalRow] {
        nodes.map {
            CanonicalRow(
                rev: $0.rev, parent: $0.parent.map { nodes[$0].rev }, deleted: $0.deleted,
                hasBody: $0.hasBody)
        }
        .sorted { $0.rev < $1.rev }
    }

    /// One row of `canonicalRows`.
    public struct CanonicalRow: Sendable, Equatable {
        public var rev: RevID
        public var parent: RevID?
        public var deleted: Bool
        public var hasBody: Bool
    }

    public var description: String {
        canonicalRows.map {
            "\($0.rev)<-\($0.parent?.description ?? "root")\($0.deleted ? " deleted" : "")"
                + "\($0.hasBody ? "" : " missing")"
        }.joined(separator: ", ")
    }
}

extension RevTree: Equatable {
    /// Trees are equal when they hold the same revisions, links and values, regardless of insertion order.
    ///
    /// Equal node arrays (a copy of the tree, or the same merges in the same order) answer without building and
    /// sorting `canonicalRows`, which was a quarter of the revtree fuzz target's CPU: its checks compare a tree with
    /// its copy after every merge.
    public static func == (lhs: RevTree, rhs: RevTree) -> Bool {
        guard lhs.nodes.count == rhs.nodes.count else { return false }
        return lhs.nodes == rhs.nodes || lhs.canonicalRows == rhs.canonicalRows
    }
}
