import RevTreeTestSupport
import Testing

@testable import RevTree

/// `RevTree ==` is content equality whatever the node order; its fast path for equal node arrays must not change
/// an answer.
@Suite struct RevTreeEqualityTests {
    @Test func aCopyAndTheSameMergesInTheSameOrderAreEqual() throws {
        var tree = RevTree()
        try tree.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        try tree.merge(path: chain("1-a", "2-x"), deleted: true)
        let copy = tree
        #expect(copy == tree)
        var again = RevTree()
        try again.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        try again.merge(path: chain("1-a", "2-x"), deleted: true)
        #expect(again.nodes == tree.nodes)
        #expect(again == tree)
    }

    @Test func anotherMergeOrderIsEqualThoughTheNodesAreInAnotherOrder() throws {
        var forward = RevTree()
        try forward.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        try forward.merge(path: chain("1-a", "2-x"), deleted: false)
        var backward = RevTree()
        try backward.merge(path: chain("1-a", "2-x"), deleted: false)
        try backward.merge(path: chain("1-a", "2-b", "3-c"), deleted: false)
        #expect(forward.nodes != backward.nodes)
        #expect(forward == backward)
    }

    @Test func theSameRevisionsWithAnotherValueOrLinkAreNotEqual() throws {
        var live = RevTree()
        try live.merge(path: chain("1-a", "2-b"), deleted: false)
        var deleted = RevTree()
        try deleted.merge(path: chain("1-a", "2-b"), deleted: true)
        #expect(live != deleted)
        // Same revisions, same count, one link fewer: 2-b is a root here.
        var split = RevTree()
        try split.merge(path: chain("1-a"), deleted: false)
        try split.merge(path: chain("2-b"), deleted: false)
        #expect(split.nodes.count == live.nodes.count)
        #expect(split != live)
    }
}
