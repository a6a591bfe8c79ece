import RevTreeTestSupport
import Testing

@testable import RevTree

/// Inputs found by the libFuzzer targets in fuzz/ (named after the input), kept so the behaviour stays pinned.
@Suite struct RevTreeFuzzRegressionTests {
    /// fuzz/targets/revtree.swift, input `\x04\x01\x00\x01\x01\x00\x00\x09A\x0b\x02@\xff…`: two leaves whose
    /// stemmed paths share a revision rejoin there, so one branch keeps `limit + 1` revisions. That is what
    /// CouchDB's stem (stem each leaf's path, merge the pieces back) gives; the doc comment claimed otherwise.
    @Test func stemmedPathsRejoinIntoABranchLongerThanTheLimit() throws {
        var tree = RevTree()
        // 1-a ← 2-b ← 3-c ← 4-d (leaf), and 2-b ← 3-x (leaf): with limit 3, 4-d keeps 3-c, 2-b;
        // 3-x keeps 2-b, 1-a. The links 3-c→2-b and 2-b→1-a both survive.
        try tree.merge(path: chain("1-a", "2-b", "3-c", "4-d"), deleted: false)
        try tree.merge(path: chain("1-a", "2-b", "3-x"), deleted: false)
        let removed = tree.stem(limit: 3)
        #expect(removed.isEmpty)
        #expect(tree.history(of: r("4-d")) == chain("1-a", "2-b", "3-c", "4-d"))
        // With limit 2 the pieces [4-d, 3-c] and [3-x, 2-b] do not share a revision: 3-c becomes a root.
        tree.stem(limit: 2)
        #expect(tree.history(of: r("4-d")) == chain("3-c", "4-d"))
        #expect(tree.history(of: r("3-x")) == chain("2-b", "3-x"))
    }
}
