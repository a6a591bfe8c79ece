import Foundation
import RevTreeTestSupport
import Testing

@testable import CouchStore
@testable import RevTree

/// The store's fast paths must give exactly what the general paths give.
@Suite struct StoreFastPathTests {
    let store: Store
    let db: Database

    init() throws {
        store = try Store(directory: temporaryDirectory())
        db = try store.create("db")
    }

    /// The tree the general path (merge into an empty tree, then stem) builds for a new document.
    func expectedTree(_ path: [RevID], deleted: Bool, limit: Int) throws -> RevTree {
        var tree = RevTree()
        try tree.merge(path: path, deleted: deleted)
        tree.stem(limit: limit)
        return tree
    }

    @Test(arguments: [1, 2, 3, 5, 40])
    func newDocumentInsertEqualsMergeAndStem(limit: Int) throws {
        try db.setRevsLimit(limit)
        let path = (1...30).reversed().map { RevID(pos: $0, hash: "h\($0)") }
        _ = try db.applyReplicated([
            RevisionWrite(docID: "long", path: path, body: body("{\"n\":1}")),
            RevisionWrite(docID: "gone", path: Array(path.prefix(3)), deleted: true, body: body("{}")),
        ])
        let long = try #require(try db.document("long"))
        #expect(long.tree == (try expectedTree(path, deleted: false, limit: limit)))
        #expect(long.winner == path[0] && long.seq == 1 && !long.deleted)
        let gone = try #require(try db.document("gone"))
        #expect(gone.tree == (try expectedTree(Array(path.prefix(3)), deleted: true, limit: limit)))
        #expect(gone.deleted)
        let info = try db.info()
        #expect(info.docCount == 1 && info.docDelCount == 1 && info.updateSeq == 2)
        let leaf = try #require(try db.revision("long", rev: nil))
        #expect(leaf.body == body("{\"n\":1}") && leaf.localSeq == 1)
        #expect(leaf.history == Array(path.prefix(min(limit, path.count))))
        // An ancestor row carries no body and is not a leaf.
        if limit > 1 { #expect(try db.revision("long", rev: path[1])?.body == nil) }
        // The fast-inserted rows are extended by the general path like any others.
        _ = try db.applyReplicated([
            RevisionWrite(docID: "long", path: [RevID(pos: 31, hash: "x")] + path, body: body("{}"))
        ])
        #expect(try db.document("long")?.winner == RevID(pos: 31, hash: "x"))
        #expect(try db.document("long")?.tree.nodes.count == min(limit, 31))
    }

    @Test func newDocumentEditUsesFastPathAndStaysEditable() throws {
        let first = try db.applyEdits([RevisionWrite(docID: "e", path: [], body: body("{\"a\":1}"))])
        let rev1 = try first[0].result.get()
        #expect(rev1.pos == 1)
        let second = try db.applyEdits([RevisionWrite(docID: "e", path: [rev1], body: body("{\"a\":2}"))])
        let rev2 = try second[0].result.get()
        #expect(try db.revision("e", rev: nil)?.history == [rev2, rev1])
        // Two creations of one id in one batch: the second sees the first's rows and conflicts.
        let both = try db.applyEdits([
            RevisionWrite(docID: "twice", path: [], body: body("{}")),
            RevisionWrite(docID: "twice", path: [], body: body("{\"b\":1}")),
        ])
        #expect((try? both[0].result.get()) != nil)
        #expect(throws: StoreError.conflict) { try both[1].result.get() }
    }

    @Test func linkedNodesBuildTheSameTreeAsRevRowsAcrossTheIndexThreshold() throws {
        // Two branches, a stemmed root, and more nodes than `indexedTreeSize`, listed newest first.
        var linked = [RevTree.LinkedNode]()
        var legacy = [(rev: RevID, parent: RevID?, deleted: Bool, hasBody: Bool)]()
        for count in [3, RevTree.indexedTreeSize, RevTree.indexedTreeSize + 1, 40] {
            linked.removeAll()
            legacy.removeAll()
            // Position of "pos-a" is count - pos; its parent "(pos-1)-a" sits one position later.
            for pos in stride(from: count, through: 1, by: -1) {
                linked.append(
                    RevTree.LinkedNode(
                        rev: r("\(pos)-a"), parent: pos > 1 ? count - pos + 1 : nil, deleted: false, hasBody: true))
                legacy.append((r("\(pos)-a"), pos > 1 ? r("\(pos - 1)-a") : nil, false, true))
            }
            linked.append(RevTree.LinkedNode(rev: r("\(count)-b"), parent: 1, deleted: false, hasBody: true))
            legacy.append((r("\(count)-b"), r("\(count - 1)-a"), false, true))
            linked.append(RevTree.LinkedNode(rev: r("7-orphan"), parent: nil, deleted: false, hasBody: true))
            legacy.append((r("7-orphan"), r("6-gone"), false, true))
            let tree = RevTree(linked: linked)
            #expect(tree == RevTree(rows: legacy))
            #expect(tree.nodes.map(\.rev) == linked.map(\.rev))
            #expect(tree.linked == linked)
            #expect(tree.contains(r("\(count)-b")) && tree.contains(r("1-a")) && !tree.contains(r("1-b")))
            #expect(tree.history(of: r("\(count)-b")).count == count)
            #expect(tree.leaves.count == 3)
        }
    }

    @Test func linkedNodesWithACycleOrBadParentFromADamagedFileDoNotLoop() {
        let tree = RevTree(linked: [
            RevTree.LinkedNode(rev: r("2-a"), parent: 1, deleted: false, hasBody: true),
            RevTree.LinkedNode(rev: r("3-b"), parent: 0, deleted: false, hasBody: true),
            RevTree.LinkedNode(rev: r("4-c"), parent: 99, deleted: false, hasBody: true),
            RevTree.LinkedNode(rev: r("5-d"), parent: 3, deleted: false, hasBody: true),
        ])
        #expect(tree.history(of: r("3-b")) == [r("3-b"), r("2-a")])
        #expect(tree.history(of: r("2-a")) == [r("2-a")])
        #expect(tree.history(of: r("4-c")) == [r("4-c")])
        #expect(tree.history(of: r("5-d")) == [r("5-d")])
    }

    @Test func mergeStaysCorrectWhenATreeGrowsPastTheIndexThreshold() throws {
        var tree = RevTree()
        let path = (1...(RevTree.indexedTreeSize + 5)).reversed().map { RevID(pos: $0, hash: "p") }
        for length in 1...path.count {
            try tree.merge(path: Array(path.suffix(length)), deleted: false)
        }
        #expect(tree.nodes.count == path.count && tree.leaves.map(\.rev) == [path[0]])
        try tree.merge(path: [RevID(pos: 3, hash: "q"), path[path.count - 2]], deleted: false)
        #expect(tree.leaves.count == 2 && tree.contains(RevID(pos: 3, hash: "q")))
        tree.stem(limit: 4)
        // Kept: the newest four of the long branch and the short branch down to its root; cut: the middle.
        #expect(tree.contains(path[0]) && tree.contains(path[path.count - 1]))
        #expect(!tree.contains(RevID(pos: 10, hash: "p")) && tree.nodes.count == 4 + 3)
        #expect(tree.node(RevID(pos: 3, hash: "q"))?.isLeaf == true)
    }

    @Test func revsDiffDecidesFromLeavesAndProbesInnerRevs() throws {
        _ = try db.applyReplicated([
            replicated("d", "1-a", "2-b", "3-c"), replicated("d", "1-a", "2-x"),
            replicated("alldone", "1-a"),
        ])
        let diff = try db.revsDiff([
            ("d", [r("3-c"), r("2-b"), r("2-x"), r("1-a"), r("2-zz"), r("3-zz"), r("9-z"), r("3-c"), r("9-z")]),
            ("absent", [r("1-a"), r("1-a")]),
            ("alldone", [r("1-a")]),
        ])
        #expect(diff.count == 2)
        #expect(diff[0].id == "d" && diff[0].missing == [r("2-zz"), r("3-zz"), r("9-z")])
        #expect(diff[0].possibleAncestors == [r("3-c"), r("2-x")])
        #expect(diff[1].id == "absent" && diff[1].missing == [r("1-a")] && diff[1].possibleAncestors.isEmpty)
        // Many revs for one document take the hashed de-duplication.
        let many = (0..<20).map { RevID(pos: 5, hash: "m\($0 % 10)") }
        let manyDiff = try db.revsDiff([("d", many)])
        #expect(manyDiff.first?.missing == Array(many.prefix(10)))
    }

    @Test func changesGroupsLeavesPerDocumentAndLimitsDocuments() throws {
        _ = try db.applyReplicated([replicated("c1", "1-a")])
        _ = try db.applyReplicated([
            replicated("c2", "1-a", "2-b"), replicated("c2", "1-a", "2-c"),
            replicated("c2", "1-a", "2-d", deleted: true),
        ])
        _ = try db.applyReplicated([replicated("c3", "1-a")])
        var rows = [ChangeRow]()
        try db.changes(since: 0, limit: nil, descending: false) {
            rows.append($0)
            return true
        }
        #expect(rows.map(\.id) == ["c1", "c2", "c3"])
        #expect(rows[1].leaves.map(\.rev) == [r("2-c"), r("2-b"), r("2-d")] && rows[1].winner == r("2-c"))
        var limited = [ChangeRow]()
        try db.changes(since: 0, limit: 2, descending: true) {
            limited.append($0)
            return true
        }
        #expect(limited.map(\.id) == ["c3", "c2"] && limited[1].leaves.count == 3)
        var none = 0
        try db.changes(since: 0, limit: 0, descending: false) { _ in
            none += 1
            return true
        }
        #expect(none == 0)
        var stopped = 0
        try db.changes(since: 0, limit: nil, descending: false) { _ in
            stopped += 1
            return false
        }
        #expect(stopped == 1)
    }

    @Test func allDocsSkipsAndLimitsDocumentsNotRevisionRows() throws {
        for id in ["a", "b", "c", "d"] {
            _ = try db.applyReplicated([replicated(id, "1-x", "2-y", "3-z"), replicated(id, "1-x", "2-w")])
        }
        var seen = [DocumentInfo]()
        try db.allDocs(startKey: nil, endKey: nil, inclusiveEnd: true, descending: false, skip: 1, limit: 2) {
            seen.append($0)
            return true
        }
        #expect(seen.map(\.id) == ["b", "c"])
        #expect(seen.allSatisfy { $0.tree.nodes.count == 4 && $0.leaves.count == 2 && $0.winner == r("3-z") })
        #expect(seen[0].tree == (try #require(try db.document("b"))).tree)
        var descending = [String]()
        try db.allDocs(startKey: "c", endKey: "a", inclusiveEnd: false, descending: true, skip: 0, limit: nil) {
            descending.append($0.id)
            return true
        }
        #expect(descending == ["c", "b"])
    }

    @Test func walStaysBoundedUnderSteadyWrites() throws {
        // 16 MiB of bodies (about 4,000 pages) in 100 commits: without checkpoints the WAL would hold all of it.
        let payload = body("{\"p\":\"" + String(repeating: "x", count: 16_000) + "\"}")
        for batch in 0..<100 {
            let writes = (0..<10).map {
                RevisionWrite(docID: "w\(batch)-\($0)", path: [r("1-a")], body: payload)
            }
            _ = try db.applyReplicated(writes)
            // However loaded the machine, each background pass gets to run before the next commit.
            while try db.withEngine({ $0.checkpointer.isRunning }) { Thread.sleep(forTimeInterval: 0.001) }
        }
        let size = (try FileManager.default.attributesOfItem(atPath: db.path + "-wal")[.size] as? NSNumber)?.intValue
        let bound = 3 * Checkpointer.walThresholdPages * 4096
        #expect(try #require(size) < bound)
        #expect(try db.info().docCount == 1000)
    }

    @Test func aBatchMixingNewAndStoredDocumentsAppliesEachWhicheverWayItIsGuessed() throws {
        let info = AttachmentInfo(
            name: "a", contentType: "x/y", digest: "md5-a", length: 1, revpos: 1, blobKey: "k")
        _ = try db.applyReplicated([replicated("s1", "1-a", atts: [.stored(info)]), replicated("s2", "1-a")])
        let stub = AttachmentRef.stub(name: "a", revpos: 1, digest: nil)
        // new, stored, stored, new, new with a stub, stored with a stub, stored resent, new at a later generation.
        let results = try db.applyReplicated([
            replicated("n1", "1-a"), replicated("s1", "1-a", "2-b"), replicated("s2", "1-a", "2-b"),
            replicated("n2", "1-a"), replicated("n3", "1-a", atts: [stub]),
            replicated("s1", "1-a", "2-b", "3-c", atts: [.stub(name: "a", revpos: nil, digest: "md5-a")]),
            replicated("s2", "1-a", "2-b"), replicated("n4", "1-a", "2-b", "3-c"),
        ])
        #expect(
            results.map { (try? $0.result.get())?.description ?? "error" } == [
                "1-a", "2-b", "2-b", "1-a", "error", "3-c", "2-b", "3-c",
            ])
        #expect(throws: StoreError.missingStub("a")) { try results[4].result.get() }
        #expect(try db.document("n3") == nil)
        #expect(try db.revision("s1", rev: nil)?.attachments == [info])
        #expect(try db.document("n4")?.tree.nodes.count == 3)
        let info2 = try db.info()
        // Six writes changed a tree (the resend and the refused stub did not).
        #expect(info2.docCount == 5 && info2.updateSeq == 2 + 6)
    }

    @Test func closingTheStoreClosesEveryConnectionBeforeItReturns() throws {
        let directory = temporaryDirectory()
        for round in 0..<20 {
            let store = try Store(directory: directory)
            let database = try round == 0 ? store.create("closing") : store.open("closing")
            _ = try database.applyReplicated([replicated("d\(round)", "1-a")])
            #expect(try database.document("d\(round)") != nil)
            store.close()
            // The last connection has checkpointed and emptied the WAL by now (it is kept, see
            // `SQLiteConnection`'s persistent WAL), although `database` is still referenced: nothing is left for
            // a finished thread to close later.
            let wal = try? FileManager.default.attributesOfItem(atPath: database.path + "-wal")
            #expect((wal?[.size] as? NSNumber)?.intValue ?? 0 == 0)
            #expect(throws: StoreError.dbNotFound) { try database.applyReplicated([replicated("late", "1-a")]) }
        }
    }

    @Test func bodiesMoveOutOfTheRowWhenReplacedAndGoWhenStemmedOrCompacted() throws {
        try db.setRevsLimit(2)
        let reader = try SQLiteConnection(path: db.path, readOnly: true, create: false)
        func kept() throws -> Int? { try reader.scalarInt("SELECT count(*) FROM bodies") }
        func text(_ rev: String) throws -> String? {
            try db.revision("d", rev: r(rev))?.body.map { String(decoding: $0, as: UTF8.self) }
        }
        _ = try db.applyReplicated([RevisionWrite(docID: "d", path: [r("1-a")], body: body("{\"v\":\"a\"}"))])
        #expect(try kept() == 0)
        _ = try db.applyReplicated([
            RevisionWrite(docID: "d", path: [r("2-b"), r("1-a")], body: body("{\"v\":\"bb\"}"))
        ])
        _ = try db.applyReplicated([RevisionWrite(docID: "d", path: [r("2-c"), r("1-a")], body: body("{\"v\":\"c\"}"))])
        // 1-a (an ancestor) and 2-b (a conflict) moved out of the row; 2-c, the latest, lives in it.
        #expect(try kept() == 2)
        #expect(try text("1-a") == "{\"v\":\"a\"}" && text("2-b") == "{\"v\":\"bb\"}" && text("2-c") == "{\"v\":\"c\"}")
        #expect(try db.info().externalSize == 10 + 9)
        // A longer 2-c branch stems 2-c away (limit 2): its body goes with it; 1-a stays as 2-b's parent.
        _ = try db.applyReplicated([
            RevisionWrite(docID: "d", path: [r("4-f"), r("3-e"), r("2-c")], body: body("{\"v\":\"ffff\"}"))
        ])
        #expect(try db.document("d")?.tree.contains(r("2-c")) == false)
        #expect(try kept() == 2)
        #expect(try db.info().externalSize == 10 + 12)
        _ = try db.compact()
        #expect(try kept() == 1)
        #expect(try text("1-a") == nil && text("2-b") == "{\"v\":\"bb\"}" && text("4-f") == "{\"v\":\"ffff\"}")
        #expect(try db.document("d")?.tree.revsInfo(of: r("2-b")).map(\.status) == [.available, .missing])
    }

    @Test func version1FileMigratesToOneRowPerDocument() throws {
        let directory = temporaryDirectory()
        let path = directory + "/old" + Store.suffix
        do {
            // A file as the first schema version left it: "doc" with an uncompacted ancestor 1-a, a leaf 2-b with an
            // attachment and a deleted conflict 2-c; "gone", deleted; one `_local` document.
            let connection = try SQLiteConnection(path: path, readOnly: false, create: true)
            try connection.execute("PRAGMA journal_mode = WAL")
            try connection.execute(Schema.version1)
            try connection.execute(
                """
                INSERT INTO db_meta (id, uuid, update_seq, doc_count, doc_del_count) VALUES (1, 'u', 4, 1, 1);
                INSERT INTO docs VALUES (1, 'doc', 4, 2, 'b', 0), (2, 'gone', 3, 1, 'x', 1);
                INSERT INTO revs (rev_rowid, doc_rowid, pos, hash, parent, is_leaf, deleted, body, local_seq) VALUES
                  (10, 1, 1, 'a', NULL, 0, 0, CAST('{"v":1}' AS BLOB), 1),
                  (11, 1, 2, 'b', 10, 1, 0, CAST('{"v":2}' AS BLOB), 2),
                  (12, 2, 1, 'x', NULL, 1, 1, CAST('{}' AS BLOB), 3),
                  (13, 1, 2, 'c', 10, 1, 1, CAST('{}' AS BLOB), 4);
                INSERT INTO rev_attachments VALUES (11, 'a.txt', 'text/plain', 'md5-x', 3, 2, NULL, NULL, 'k1');
                INSERT INTO local_docs VALUES ('x', 2, CAST('{}' AS BLOB));
                PRAGMA user_version = 1;
                """)
        }
        let old = try Store(directory: directory)
        defer { old.close() }
        let database = try old.open("old")
        let winner = try #require(try database.revision("doc", rev: nil))
        #expect(winner.rev == r("2-b") && winner.body == body("{\"v\":2}") && winner.localSeq == 2)
        #expect(winner.history == [r("2-b"), r("1-a")])
        #expect(winner.attachments.map(\.blobKey) == ["k1"] && winner.attachments.first?.revpos == 2)
        #expect(try database.revision("doc", rev: r("1-a"))?.body == body("{\"v\":1}"))
        #expect(try database.document("doc")?.leaves.map(\.rev) == [r("2-b"), r("2-c")])
        #expect(try database.document("gone")?.deleted == true)
        let info = try database.info()
        #expect(info.docCount == 1 && info.docDelCount == 1 && info.updateSeq == 4)
        // Leaf bodies plus the 3 attachment bytes of 2-b, as CouchDB counts `sizes.external`.
        #expect(info.externalSize == 7 + 3 + 2 + 2)
        var seqs = [Int]()
        try database.changes(since: 0, limit: nil, descending: false) {
            seqs.append($0.seq)
            return true
        }
        #expect(seqs == [3, 4])
        #expect(try database.localDocument("x")?.rev == 2)
        #expect(try database.compact() == ["k1"])
        #expect(try database.revision("doc", rev: r("1-a"))?.body == nil)
        // The next write continues the old sequence.
        _ = try database.applyReplicated([replicated("new", "1-n")])
        #expect(try database.document("new")?.seq == 5)
        let check = try SQLiteConnection(path: path, readOnly: true, create: false)
        #expect(try check.scalarInt("PRAGMA user_version") == Schema.latest)
        #expect(try check.scalarInt("SELECT count(*) FROM sqlite_schema WHERE name IN ('docs', 'revs')") == 0)
        let integrity = try check.prepare("PRAGMA integrity_check")
        #expect(try integrity.step() && integrity.text(0) == "ok")
        integrity.reset()
    }

    @Test func aFileFromANewerVersionIsRefused() throws {
        let directory = temporaryDirectory()
        let path = directory + "/newer" + Store.suffix
        do {
            let connection = try SQLiteConnection(path: path, readOnly: false, create: true)
            try connection.execute("PRAGMA user_version = \(Schema.latest + 1)")
        }
        let store = try Store(directory: directory)
        defer { store.close() }
        #expect(throws: StoreError.self) { try store.open("newer") }
    }
}
