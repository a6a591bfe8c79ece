import CSQLite
import Foundation
import RevTreeTestSupport
import Testing

@testable import CouchStore
@testable import RevTree

func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "revtree-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func body(_ text: String) -> [UInt8] { Array(text.utf8) }

func replicated(_ id: String, _ revs: String..., deleted: Bool = false, atts: [AttachmentRef] = []) -> RevisionWrite {
    RevisionWrite(
        docID: id, path: revs.reversed().map(r), deleted: deleted, body: body("{\"v\":\"\(revs.last ?? "")\"}"),
        attachments: atts)
}

@Suite struct StoreTests {
    let store: Store
    let db: Database

    init() throws {
        store = try Store(directory: temporaryDirectory())
        db = try store.create("db")
    }

    @Test func liveDocumentCountBeforeAKeySkipsDeletedDocuments() throws {
        _ = try db.applyReplicated([
            replicated("a", "1-a"), replicated("b", "1-b"), replicated("c", "1-c", "2-c", deleted: true),
            replicated("d", "1-d"),
        ])
        #expect(try db.liveDocumentCount(before: "d", descending: false) == 2)
        #expect(try db.liveDocumentCount(before: "a", descending: false) == 0)
        #expect(try db.liveDocumentCount(before: "b", descending: true) == 1)
        #expect(try db.liveDocumentCount(before: "zz", descending: false) == 3)
    }

    /// A 238-byte name full of `/` made a file name past 255 bytes (each `/` became `%2F`): it now fits, and
    /// every name that fitted keeps the file it had (existing data dirs stay readable).
    @Test func longestNameFullOfSlashesGetsAFileAndShortNamesKeepTheirs() throws {
        #expect(Store.encode("a/b") == "a%2Fb")
        #expect(Store.encode("_users") == "_users")
        let fitting = "a" + String(repeating: "/", count: 40) + String(repeating: "b", count: 100)
        #expect(Store.encode(fitting) == "a" + String(repeating: "%2F", count: 40) + String(repeating: "b", count: 100))
        for name in ["a" + String(repeating: "/", count: 237), "a" + String(repeating: "/b", count: 118) + "c"] {
            let file = Store.encode(name)
            #expect(file.utf8.count + ".couch-journal".utf8.count <= 255)
            #expect(Store.decode(file) == name)
            let created = try store.create(name)
            _ = try created.applyReplicated([replicated("doc", "1-a")])
            #expect(store.databaseNames().contains(name))
            #expect(try store.open(name).liveDocumentCount(before: "z", descending: false) == 1)
        }
        #expect(Store.decode(fitting.replacingOccurrences(of: "/", with: ",")) == nil)
        #expect(Store.decode(Store.encode(fitting)) == fitting)
    }

    @Test func changeCountCountsDocumentsUpdatedAfterASeq() throws {
        _ = try db.applyReplicated([replicated("a", "1-a"), replicated("b", "1-b"), replicated("c", "1-c")])
        _ = try db.applyReplicated([replicated("a", "1-a", "2-a")])
        #expect(try db.changeCount(since: 0) == 3)
        #expect(try db.changeCount(since: db.updateSeq) == 0)
        // a moved to the newest seq: after b's seq, c and a remain.
        var seqOfB = 0
        try db.changes(since: 0, limit: nil, descending: false) { row in
            if row.id == "b" { seqOfB = row.seq }
            return true
        }
        #expect(try db.changeCount(since: seqOfB) == 2)
    }

    @Test func createOpenDeleteAndNames() throws {
        #expect(throws: StoreError.fileExists) { try store.create("db") }
        #expect(throws: StoreError.dbNotFound) { try store.open("nope") }
        _ = try store.create("a/b")
        #expect(store.databaseNames() == ["a/b", "db"])
        try store.delete("a/b")
        #expect(store.databaseNames() == ["db"])
        #expect(throws: StoreError.dbNotFound) { try store.delete("a/b") }
        #expect(try store.open("db") === db)
        store.close()
    }

    @Test func replicatedWritesAreIdempotentAndGetOneSeq() throws {
        let results = try db.applyReplicated([replicated("doc", "1-a", "2-b")])
        #expect(try results[0].result.get() == r("2-b"))
        #expect(db.updateSeq == 1)
        _ = try db.applyReplicated([replicated("doc", "1-a", "2-b"), replicated("doc", "2-b")])
        #expect(db.updateSeq == 1)  // unchanged tree, no new seq
        _ = try db.applyReplicated([replicated("doc", "1-a", "2-c")])
        let info = try #require(try db.document("doc"))
        #expect(info.winner == r("2-c") && info.leaves.map(\.rev) == [r("2-c"), r("2-b")])
        #expect(db.updateSeq == 2)
        let revision = try #require(try db.revision("doc", rev: r("2-b")))
        #expect(revision.body == body("{\"v\":\"2-b\"}") && revision.history == [r("2-b"), r("1-a")])
        #expect(try db.revision("doc", rev: r("1-a"))?.body == nil)
        #expect(try db.leafRevisions("doc").map(\.rev) == [r("2-c"), r("2-b")])
        var rows = [ChangeRow]()
        try db.changes(since: 0, limit: nil, descending: false) {
            rows.append($0)
            return true
        }
        #expect(rows.count == 1 && rows[0].seq == 2 && rows[0].leaves.count == 2)
    }

    @Test func interactiveEditsConflictsAndRecreation() throws {
        let first = try db.applyEdits([RevisionWrite(docID: "d", path: [], body: body("{}"))])[0].result.get()
        #expect(first.pos == 1 && first.hash.count == 32)
        #expect(throws: StoreError.conflict) {
            try db.applyEdits([RevisionWrite(docID: "d", path: [], body: body("{\"x\":1}"))])[0].result.get()
        }
        #expect(throws: StoreError.conflict) {
            try db.applyEdits([RevisionWrite(docID: "d", path: [r("1-zzz")], body: body("{}"))])[0].result.get()
        }
        let second = try db.applyEdits([RevisionWrite(docID: "d", path: [first], body: body("{\"x\":1}"))])[0]
            .result.get()
        #expect(second.pos == 2)
        #expect(throws: StoreError.conflict) {  // editing a non-leaf
            try db.applyEdits([RevisionWrite(docID: "d", path: [first], body: body("{\"x\":2}"))])[0].result.get()
        }
        let gone = try db.applyEdits([RevisionWrite(docID: "d", path: [second], deleted: true, body: body("{}"))])[0]
            .result.get()
        #expect(try db.info().docCount == 0 && db.info().docDelCount == 1)
        let back = try db.applyEdits([RevisionWrite(docID: "d", path: [], body: body("{\"y\":1}"))])[0].result.get()
        #expect(back.pos == gone.pos + 1)  // grafted onto the deleted winner
        #expect(try db.document("d")?.tree.history(of: back) == [back, gone, second, first])
        #expect(try db.info().docCount == 1 && db.info().docDelCount == 0)
        // A deterministic rev: the same edit of another doc with the same parentless body has the same hash.
        let other = try db.applyEdits([RevisionWrite(docID: "e", path: [], body: body("{}"))])[0].result.get()
        #expect(other == first)
    }

    @Test func stemmingToRevsLimit() throws {
        try db.setRevsLimit(2)
        #expect(db.revsLimit == 2)
        _ = try db.applyReplicated([replicated("s", "1-a", "2-b", "3-c", "4-d")])
        #expect(try db.document("s")?.tree.nodes.count == 2)
        #expect(try db.revision("s", rev: nil)?.history == [r("4-d"), r("3-c")])
        let diff = try db.revsDiff([("s", [r("1-a"), r("4-d"), r("5-e")]), ("new", [r("1-x")])])
        #expect(diff.count == 2)
        #expect(diff[0].missing == [r("1-a"), r("5-e")] && diff[0].possibleAncestors == [r("4-d")])
        #expect(diff[1].missing == [r("1-x")] && diff[1].possibleAncestors.isEmpty)
        #expect(throws: StoreError.self) { try db.setRevsLimit(0) }
    }

    @Test func attachmentsStubsAndCompaction() throws {
        let info = AttachmentInfo(
            name: "a.txt", contentType: "text/plain", digest: "md5-x", length: 3, revpos: 1,
            blobKey: "k1")
        _ = try db.applyReplicated([replicated("att", "1-a", atts: [.stored(info)])])
        let results = try db.applyReplicated([
            replicated("att", "1-a", "2-b", atts: [.stub(name: "a.txt", revpos: 1, digest: nil)]),
            replicated("att", "1-a", "2-c", atts: [.stub(name: "nope", revpos: nil, digest: nil)]),
            replicated("att", "1-a", "2-d", atts: [.stub(name: "a.txt", revpos: 7, digest: nil)]),
        ])
        #expect(try results[0].result.get() == r("2-b"))
        #expect(throws: StoreError.missingStub("nope")) { try results[1].result.get() }
        #expect(throws: StoreError.missingStub("a.txt")) { try results[2].result.get() }
        #expect(try db.document("att")?.leaves.map(\.rev) == [r("2-b")])  // failed writes stored nothing
        #expect(try db.revision("att", rev: r("2-b"))?.attachments == [info])
        let edited = try db.applyEdits([
            RevisionWrite(
                docID: "att", path: [r("2-b")], body: body("{}"),
                attachments: [
                    .stub(name: "a.txt", revpos: nil, digest: "md5-x"),
                    .stored(
                        AttachmentInfo(
                            name: "b", contentType: "x/y", digest: "md5-y", length: 1,
                            revpos: 0, blobKey: "k2")),
                ])
        ])[0].result.get()
        let stored = try #require(try db.revision("att", rev: edited))
        #expect(stored.attachments.map(\.revpos) == [1, 3])
        #expect(try db.referencedBlobKeys() == ["k1", "k2"])
        #expect(try db.revision("att", rev: r("1-a"))?.body != nil)  // before compaction, old bodies stay
        let kept = try db.compact()
        #expect(kept == ["k1", "k2"])
        #expect(try db.revision("att", rev: r("1-a"))?.body == nil)
        #expect(try db.revision("att", rev: r("2-b"))?.attachments.isEmpty == true)
        #expect(try db.revision("att", rev: edited)?.body == body("{}"))
    }

    @Test func localDocumentsHaveNoTreeAndNoSeq() throws {
        #expect(try db.putLocal("_local/x", body: body("{\"a\":1}")) == 1)
        #expect(try db.putLocal("_local/x", body: body("{\"a\":2}"), rev: 1) == 2)
        #expect(try db.localDocument("_local/x")?.rev == 2)
        #expect(db.updateSeq == 0)
        #expect(try db.deleteLocal("_local/x") && !db.deleteLocal("_local/x"))
        #expect(try db.localDocument("_local/x") == nil)
    }

    @Test func allDocsAndChangesOrder() throws {
        for id in ["c", "a", "b"] { _ = try db.applyReplicated([replicated(id, "1-x")]) }
        _ = try db.applyReplicated([replicated("b", "1-x", "2-y", deleted: true)])
        var ids = [String]()
        try db.allDocs(startKey: nil, endKey: nil, inclusiveEnd: true, descending: false, skip: 0, limit: nil) {
            ids.append($0.id)
            return true
        }
        #expect(ids == ["a", "c"])
        var seqs = [(Int, String, Bool)]()
        try db.changes(since: 1, limit: nil, descending: false) {
            seqs.append(($0.seq, $0.id, $0.deleted))
            return true
        }
        #expect(seqs.map(\.1) == ["a", "b"] && seqs.map(\.0) == [2, 4] && seqs.map(\.2) == [false, true])
        var limited = 0
        try db.changes(since: 0, limit: 1, descending: true) { _ in
            limited += 1
            return true
        }
        #expect(limited == 1)
    }

    @Test func waitForChangeWakesOnCommit() throws {
        let database = db
        let start = ContinuousClock.now
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) {
            _ = try? database.applyReplicated([replicated("w", "1-a")])
        }
        #expect(db.waitForChange(after: 0, timeout: .seconds(5)) == 1)
        #expect(ContinuousClock.now - start < .seconds(3))
        #expect(db.waitForChange(after: 1, timeout: .milliseconds(50)) == 1)
    }

    @Test func concurrentWritersShareCommits() throws {
        let database = db
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for batch in 0..<10 {
                _ = try? database.applyReplicated((0..<10).map { replicated("w\(worker)-\(batch)-\($0)", "1-a") })
            }
        }
        #expect(try db.info().docCount == 800 && db.updateSeq == 800)
    }

    @Test func hostileInputIsRejectedAndStoresNothing() throws {
        let hugeID = String(repeating: "x", count: 1_000_000)
        let results = try db.applyReplicated([
            RevisionWrite(docID: hugeID, path: [r("1-a")], body: body("{}")),
            RevisionWrite(docID: "", path: [r("1-a")], body: body("{}")),
            RevisionWrite(docID: "gap", path: [r("3-a"), r("1-b")], body: body("{}")),
            RevisionWrite(docID: "negative", path: [RevID(pos: -1, hash: "a")], body: body("{}")),
            RevisionWrite(docID: "big", path: [r("1-a")], body: [UInt8](repeating: 32, count: 8_000_001)),
            RevisionWrite(docID: "ctl", path: [RevID(pos: 1, hash: "a\nb")], body: body("{}")),
        ])
        #expect(results.allSatisfy { (try? $0.result.get()) == nil })
        #expect(throws: StoreError.self) { try Database.validateDocID(bytes: [0x61, 0xff, 0x62]) }
        #expect(db.updateSeq == 0)
    }

    /// A replicated generation 0 is stored, read back after a reopen (the tree's codec takes it), and edited on.
    @Test func generationZeroIsStoredAndSurvivesAReopen() throws {
        let zero = RevID(pos: 0, hash: "abc")
        let results = try db.applyReplicated([
            RevisionWrite(docID: "z", path: [zero], body: body(#"{"v":1}"#)),
            RevisionWrite(docID: "bare", path: [RevID(pos: 0, hash: "")], body: body("{}")),
        ])
        #expect(results.allSatisfy { (try? $0.result.get()) != nil })
        #expect(try db.document("z")?.winner == zero)
        let edited = try db.applyEdits([RevisionWrite(docID: "z", path: [zero], body: body(#"{"v":2}"#))])
        let rev = try #require(try? edited[0].result.get())
        #expect(rev.pos == 1)
        let directory = store.directory
        store.close()
        let again = try Store(directory: directory)
        let reopened = try again.open("db")
        #expect(try reopened.document("z")?.winner == rev)
        #expect(try reopened.document("bare")?.winner == RevID(pos: 0, hash: ""))
        again.close()
    }

    @Test func integrityAfterReopen() throws {
        _ = try db.applyReplicated([replicated("p", "1-a", "2-b")])
        let directory = store.directory
        store.close()
        let again = try Store(directory: directory)
        let reopened = try again.open("db")
        #expect(reopened.updateSeq == 1)
        #expect(try reopened.document("p")?.winner == r("2-b"))
        again.close()
    }
}
