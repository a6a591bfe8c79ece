import RevTreeTestSupport
import Testing

@testable import RevTree

@Suite struct RevIDTests {
    @Test func parsesAndPrints() throws {
        let rev = try RevID(parsing: "12-abcdef")
        #expect(rev.pos == 12 && rev.hash == "abcdef" && rev.description == "12-abcdef")
        #expect(try RevID(parsing: "3-a-b").hash == "a-b")  // split at the first dash, like couch_doc:parse_rev
    }

    @Test(arguments: ["", "-", "-abc", "abc", "x-abc", "1x-abc", "1234567890123456-a", "1-a\u{1}b", " 1-a"])
    func rejectsInvalidRevFormat(_ text: String) {
        #expect(throws: RevTreeError.invalidRevFormat) { try RevID(parsing: text) }
    }

    /// CouchDB keeps a bare `N-` as generation N with an empty hash (PouchDB's "7829 bare rev 1- with
    /// new_edits=false"); an empty hash is still a hash, so the revision round-trips and merges as any other.
    @Test func acceptsABareRevWithAnEmptyHash() throws {
        let bare = try RevID(parsing: "1-")
        #expect(bare == RevID(pos: 1, hash: ""))
        #expect(bare.description == "1-")
        #expect(try RevID.path(start: 2, ids: ["", ""]) == [RevID(pos: 2, hash: ""), RevID(pos: 1, hash: "")])
        #expect(RevID(pos: 1, hash: "") < RevID(pos: 1, hash: "a"))
        var tree = RevTree()
        #expect(try tree.merge(path: [bare], deleted: false).outcome == .newLeaf)
        #expect(tree.winner?.rev == bare)
        #expect(try tree.merge(path: [bare], deleted: false).changed == false)
    }

    @Test func ordersByPosThenHashBytesNotByString() {
        #expect(r("2-bbb") < r("10-000"))  // "10-000" < "2-bbb" as strings: CBL's flaw
        #expect(r("1-a") < r("1-b"))
    }

    @Test func revisionsPathRejectsHostileStarts() {
        #expect(throws: RevTreeError.self) { try RevID.path(start: -1, ids: ["a"]) }
        #expect(throws: RevTreeError.self) { try RevID.path(start: -3, ids: ["a"]) }
        #expect(throws: RevTreeError.self) { try RevID.path(start: 1, ids: ["a", "b", "c"]) }
        #expect(throws: RevTreeError.self) { try RevID.path(start: 0, ids: ["a", "b"]) }
        #expect(throws: RevTreeError.self) { try RevID.path(start: Int.min, ids: ["a"]) }
        #expect(throws: RevTreeError.self) { try RevID.path(start: 3, ids: []) }
        #expect(throws: RevTreeError.pathTooLong(100_000)) {
            try RevID.path(start: 100_000, ids: Array(repeating: "a", count: 100_000))
        }
        #expect((try? RevID.path(start: 3, ids: ["c", "b"])) == [r("3-c"), r("2-b")])
    }

    /// CouchDB 3.4.3 stores a replicated generation 0 (`0-x`, `0-`, or the oldest id of `_revisions`).
    @Test func generationZeroIsARevisionLikeAnyOther() throws {
        #expect(try RevID.path(start: 0, ids: ["a"]) == [RevID(pos: 0, hash: "a")])
        #expect(try RevID.path(start: 1, ids: ["b", ""]) == [r("1-b"), RevID(pos: 0, hash: "")])
        try RevID.validate(path: [RevID(pos: 1, hash: "b"), RevID(pos: 0, hash: "a")])
        #expect(throws: RevTreeError.self) { try RevID.validate(path: [RevID(pos: -1, hash: "a")]) }
        #expect(throws: RevTreeError.self) {
            try RevID.validate(path: [RevID(pos: 0, hash: "b"), RevID(pos: -1, hash: "a")])
        }
        #expect(try RevID(parsing: "0-") == RevID(pos: 0, hash: ""))
        #expect(RevID(pos: 0, hash: "z") < RevID(pos: 1, hash: ""))
        var tree = RevTree()
        #expect(try tree.merge(path: [RevID(pos: 0, hash: "a")], deleted: false).outcome == .newLeaf)
        #expect(try tree.merge(path: [r("1-b"), RevID(pos: 0, hash: "a")], deleted: false).changed)
        #expect(tree.winner?.rev == r("1-b"))
    }

    @Test func nonHexHashesAreAcceptedLikeCouchDB() throws {
        #expect(try RevID.path(start: 2, ids: ["not hex!", "ALSO_NOT"]).count == 2)
    }
}

@Suite struct RevTreeMergeTests {
    @Test func mergeIntoEmptyTreeIsNewLeaf() throws {
        var tree = RevTree()
        let result = try tree.merge(path: chain("1-a", "2-b"), deleted: false)
        #expect(result.outcome == .newLeaf && result.changed)
        #expect(tree.winner?.rev == r("2-b"))
        #expect(tree.node(r("1-a"))?.hasBody == false)
    }

    @Test func extendingALeafIsNewLeaf() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a"), deleted: false)
        let result = try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        #expect(result.outcome == .newLeaf)
        #expect(tree.leaves.map(\.rev) == [r("3-c")])
        #expect(tree.history(of: r("3-c")) == chain("1-a", "2-b", "3-c"))
    }

    @Test func branchingOffAnInternalNodeIsNewBranch() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b"), deleted: false)
        let result = try tree.merge(path: chain("1-a", "2-c"), deleted: false)
        #expect(result.outcome == .newBranch)
        #expect(tree.winner?.rev == r("2-c"))
        #expect(tree.conflicts == [r("2-b")])
    }

    @Test func disjointPathBecomesANewRoot() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b"), deleted: false)
        let result = try tree.merge(path: chain("4-d", "5-e"), deleted: false)
        #expect(result.outcome == .newBranch)
        #expect(tree.nodes.filter { $0.parent == nil }.count == 2)
        #expect(tree.winner?.rev == r("5-e"))
    }

    @Test func mergingTheSamePathTwiceChangesNothing() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        let snapshot = tree
        let result = try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        #expect(result.outcome == .internalNode && !result.changed)
        #expect(tree == snapshot)
        #expect(try !tree.merge(path: chain("2-b", "3-c"), deleted: false).changed)
    }

    @Test func realBodyReplacesMissing() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b"), deleted: false)
        let result = try tree.merge(path: chain("1-a"), deleted: false)
        #expect(result.changed && result.leafValueSet && result.outcome == .internalNode)
        #expect(tree.node(r("1-a"))?.hasBody == true)
    }

    @Test func deletedLeafLosesToLiveLeafOfLowerGeneration() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: true)
        try tree.merge(path: chain("1-a", "2-x"), deleted: false)
        #expect(tree.winner?.rev == r("2-x"))
        #expect(tree.deletedConflicts == [r("3-c")])
        #expect(tree.conflicts.isEmpty)
        #expect(!tree.isDeleted)
        #expect(tree.revsInfo(of: r("3-c")).map(\.status) == [.deleted, .missing, .missing])
    }

    @Test func allDeletedMeansDocumentDeleted() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b"), deleted: true)
        try tree.merge(path: chain("1-a", "2-c"), deleted: true)
        #expect(tree.isDeleted && tree.winner?.rev == r("2-c"))
    }

    @Test func stemmingKeepsEveryLeafAndMakesRoots() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c", "4-d"), deleted: false)
        try tree.merge(path: chain("1-a", "2-x"), deleted: false)
        let removed = tree.stem(limit: 2)
        #expect(Set(removed) == [r("2-b")])  // 1-a survives: it is within 2 of leaf 2-x
        #expect(Set(tree.leaves.map(\.rev)) == [r("4-d"), r("2-x")])
        #expect(tree.parent(of: r("3-c")) == nil)
        #expect(tree.stem(limit: 1).count == 2)
        #expect(Set(tree.nodes.map(\.rev)) == [r("4-d"), r("2-x")])
    }

    @Test func stemmedPathIsReExtendedByALongerHistory() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        tree.stem(limit: 1)
        #expect(tree.nodes.map(\.rev) == [r("3-c")])
        // Resending the full path with the same limit changes nothing after stemming.
        var again = tree
        try again.merge(path: chain("1-a", "2-b", "3-c", "4-d"), deleted: false)
        again.stem(limit: 1)
        #expect(again.nodes.map(\.rev) == [r("4-d")])
        // With a larger limit, the old history hangs back above the stemmed root.
        try tree.merge(path: chain("1-a", "2-b", "3-c", "4-d"), deleted: false)
        tree.stem(limit: 10)
        #expect(tree.history(of: r("4-d")) == chain("1-a", "2-b", "3-c", "4-d"))
    }

    @Test func mergeAfterStemmingLinesUpByDepth() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c", "4-d"), deleted: false)
        tree.stem(limit: 2)
        let result = try tree.merge(path: chain("2-b", "3-c", "4-d", "5-e"), deleted: false)
        #expect(result.outcome == .newLeaf)
        tree.stem(limit: 2)
        #expect(tree.history(of: r("5-e")) == chain("4-d", "5-e"))
    }

    @Test func contradictingParentIsIgnoredNotDuplicated() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        try tree.merge(path: chain("1-z", "2-y", "3-c"), deleted: false)
        #expect(tree.leaves.map(\.rev) == [r("3-c")])
        #expect(!tree.contains(r("2-y")))
    }

    @Test func revsDiffHelpers() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        try tree.merge(path: chain("1-a", "2-d"), deleted: true)
        #expect(tree.missing([r("3-c"), r("4-x"), r("4-x"), r("2-q")]) == [r("4-x"), r("2-q")])
        #expect(tree.possibleAncestors(for: [r("4-x"), r("2-q")]) == [r("3-c"), r("2-d")])
        #expect(tree.possibleAncestors(for: [r("3-q")]) == [r("2-d")])
        #expect(tree.possibleAncestors(for: [r("1-q")]).isEmpty)
    }
}

@Suite struct RevTreeLatestTests {
    @Test func leavesDescendingFromARevisionAreWhatLatestReturns() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        try tree.merge(path: chain("1-a", "2-b", "3-d"), deleted: true)
        try tree.merge(path: chain("1-a", "2-x"), deleted: false)
        // Live leaf before the deleted one; only leaves under 2-b.
        #expect(tree.leaves(descendingFrom: r("2-b")) == [r("3-c"), r("3-d")])
        #expect(tree.leaves(descendingFrom: r("1-a")) == [r("3-c"), r("2-x"), r("3-d")])
        #expect(tree.leaves(descendingFrom: r("2-x")) == [r("2-x")])
        #expect(tree.leaves(descendingFrom: r("9-zz")).isEmpty)
        #expect(tree.latest(of: r("2-b")) == [r("3-c"), r("3-d")])
        #expect(tree.latest(of: r("2-x")) == [r("2-x")])
        #expect(tree.latest(of: r("9-zz")) == [r("9-zz")])  // not in the tree: asked for as it is
    }
}
