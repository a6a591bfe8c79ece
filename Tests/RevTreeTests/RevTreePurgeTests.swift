import RevTreeTestSupport
import Testing

@testable import RevTree

/// `RevTree.purge(leaves:)` against `couch_key_tree:remove_leafs/2`: leaves go with the revisions only they reach.
@Suite struct RevTreePurgeTests {
    /// 1-a → 2-b → 3-c, with a conflict 2-x → 3-y off 1-a.
    func branched() throws -> RevTree {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        try tree.merge(path: chain("1-a", "2-x", "3-y"), deleted: false)
        return tree
    }

    @Test func purgingOneBranchKeepsTheSharedAncestors() throws {
        var tree = try branched()
        #expect(tree.purge(leaves: [r("3-y")]) == [r("3-y")])
        #expect(Set(tree.nodes.map(\.rev)) == [r("1-a"), r("2-b"), r("3-c")])
        #expect(tree.winner?.rev == r("3-c"))
        #expect(tree.parent(of: r("2-b")) == r("1-a"))
    }

    @Test func aNonLeafIsNotPurged() throws {
        var tree = try branched()
        let before = tree
        #expect(tree.purge(leaves: [r("2-b"), r("1-a")]).isEmpty)
        #expect(tree == before)
    }

    @Test func unknownAndDuplicateRevsAreIgnored() throws {
        var tree = try branched()
        #expect(tree.purge(leaves: [r("9-zz"), r("3-c"), r("3-c"), r("1-")]) == [r("3-c")])
        #expect(Set(tree.nodes.map(\.rev)) == [r("1-a"), r("2-x"), r("3-y")])
    }

    @Test func purgingEveryLeafEmptiesTheTree() throws {
        var tree = try branched()
        #expect(Set(tree.purge(leaves: [r("3-c"), r("3-y")])) == [r("3-c"), r("3-y")])
        #expect(tree.isEmpty)
        #expect(tree.winner == nil)
        #expect(tree.purge(leaves: [r("3-c")]).isEmpty)
    }

    @Test func aDeletedLeafCanBePurgedAndTheLiveBranchWins() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b"), deleted: true)
        try tree.merge(path: chain("1-a", "2-c"), deleted: false)
        #expect(tree.purge(leaves: [r("2-c")]) == [r("2-c")])
        #expect(tree.isDeleted)
        #expect(tree.nodes.count == 2)
    }

    @Test func separateRootsArePurgedAlone() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b"), deleted: false)
        try tree.merge(path: chain("5-m", "6-n"), deleted: false)
        #expect(tree.purge(leaves: [r("2-b")]) == [r("2-b")])
        #expect(Set(tree.nodes.map(\.rev)) == [r("5-m"), r("6-n")])
    }

    /// A hostile request: a huge list of revs, most unknown, against a deep history. Only the one leaf goes, and
    /// the work stays linear (each walk up stops where another already went).
    @Test func aHugeListPurgesOnlyLeaves() throws {
        var tree = RevTree()
        let depth = 2000
        let path = (1...depth).reversed().map { RevID(pos: $0, hash: "h\($0)") }
        try tree.merge(path: path, deleted: false)
        try tree.merge(path: [RevID(pos: depth, hash: "other")] + path.dropFirst(), deleted: false)
        var revs = (1...50_000).map { RevID(pos: $0, hash: "nope\($0)") }
        revs += path  // every ancestor too: none is a leaf but the first
        let purged = tree.purge(leaves: revs)
        #expect(purged == [path[0]])
        #expect(tree.nodes.count == depth)
        #expect(tree.winner?.rev == RevID(pos: depth, hash: "other"))
    }
}
