import Foundation
import RevTreeTestSupport
import Testing

@testable import CouchStore

/// `Database.purge`: the tree, the bodies, the counts, `_changes` and the purge log after a purge, and across a
/// reopen of the file.
@Suite struct StorePurgeTests {
    let directory = temporaryDirectory()
    let store: Store
    let db: Database

    init() throws {
        store = try Store(directory: directory)
        db = try store.create("db")
    }

    static func attachment(_ key: String) -> AttachmentRef {
        .stored(
            AttachmentInfo(
                name: "\(key).bin", contentType: "application/octet-stream", digest: "md5-\(key)", length: 10,
                revpos: 1, blobKey: key))
    }

    func changedIDs() throws -> [String] {
        var ids = [String]()
        try db.changes(since: 0, limit: nil, descending: false) { row in
            ids.append(row.id)
            return true
        }
        return ids
    }

    @Test func purgingEveryLeafRemovesTheDocumentItsBodiesAndItsBlobs() throws {
        _ = try db.applyReplicated([
            replicated("gone", "1-a", "2-b", atts: [StorePurgeTests.attachment("k-gone")]),
            replicated("kept", "1-a", atts: [StorePurgeTests.attachment("k-kept")]),
        ])
        let seq = db.updateSeq
        let outcome = try db.purge([(docID: "gone", revs: [r("2-b")])])
        #expect(outcome.results == [Database.PurgeResult(docID: "gone", purged: [r("2-b")])])
        #expect(outcome.referencedBlobKeys == ["k-kept"])
        #expect(try db.document("gone") == nil)
        #expect(try db.revision("gone", rev: r("2-b")) == nil)
        #expect(try changedIDs() == ["kept"])
        let info = try db.info()
        #expect(info.docCount == 1 && info.docDelCount == 0 && info.purgeSeq == 1)
        #expect(info.updateSeq == seq + 1)
        #expect(info.externalSize == (try db.leafRevisions("kept").first?.body?.count ?? -1) + 10)
    }

    @Test func aRemainingBranchMovesToANewSeqWithItsBody() throws {
        _ = try db.applyReplicated([replicated("d", "1-a", "2-b"), replicated("d", "1-a", "2-c")])
        _ = try db.applyReplicated([replicated("other", "1-x")])
        let outcome = try db.purge([(docID: "d", revs: [r("2-c"), r("1-a"), r("7-nope")])])
        #expect(outcome.results[0].purged == [r("2-c")])
        #expect(try changedIDs() == ["other", "d"])
        let remaining = try db.revision("d", rev: nil)
        #expect(remaining?.rev == r("2-b"))
        #expect(remaining?.body == body("{\"v\":\"2-b\"}"))
        #expect(try db.revision("d", rev: r("2-c")) == nil)
        #expect(try db.info().docCount == 2)
        // The purge seq counts request entries; update_seq moved with the re-sequenced document.
        _ = try db.purge([(docID: "x", revs: []), (docID: "y", revs: [r("1-q")])])
        #expect(try db.info().purgeSeq == 3)
    }

    @Test func purgingADeletedWinnerLeavesTheLiveConflict() throws {
        _ = try db.applyReplicated([
            replicated("d", "1-a", "2-b", deleted: true), replicated("d", "1-a", "2-c"),
        ])
        #expect(try db.info().docCount == 1)
        _ = try db.purge([(docID: "d", revs: [r("2-c")])])
        let info = try db.info()
        #expect(info.docCount == 0 && info.docDelCount == 1)
        #expect(try db.document("d")?.deleted == true)
    }

    @Test func theLogTellsIndexesWhatWasPurgedUntilTheLimitTrimsIt() throws {
        _ = try db.applyReplicated((0..<5).map { replicated("d\($0)", "1-a") })
        #expect(try db.purgedDocuments(since: 0).map { $0.ids } == [])
        for index in 0..<3 { _ = try db.purge([(docID: "d\(index)", revs: [r("1-a")])]) }
        #expect(try db.purgedDocuments(since: 0)?.ids == ["d0", "d1", "d2"])
        #expect(try db.purgedDocuments(since: 2)?.ids == ["d2"])
        #expect(try db.purgedDocuments(since: 3)?.purgeSeq == 3)
        try db.setPurgedInfosLimit(1)
        #expect(try db.purgedInfosLimit() == 1)
        #expect(try db.purgedDocuments(since: 0) == nil)  // trimmed: an index that old must rebuild
        #expect(try db.purgedDocuments(since: 2)?.ids == ["d2"])
        #expect(throws: StoreError.self) { try db.setPurgedInfosLimit(0) }
    }

    @Test func aPurgeOutlivesAReopen() throws {
        _ = try db.applyReplicated([replicated("d", "1-a"), replicated("e", "1-a")])
        _ = try db.purge([(docID: "d", revs: [r("1-a")])])
        store.close()
        let again = try Store(directory: directory).open("db")
        #expect(try again.document("d") == nil)
        #expect(try again.info().purgeSeq == 1 && again.info().docCount == 1)
        #expect(try again.purgedDocuments(since: 0)?.ids == ["d"])
    }

    @Test func purgingADesignDocumentInvalidatesDesignCaches() throws {
        _ = try db.applyReplicated([replicated("_design/v", "1-a")])
        let generation = db.designGeneration
        _ = try db.purge([(docID: "_design/v", revs: [r("1-a")])])
        #expect(db.designGeneration != generation)
        #expect(try db.document("_design/v") == nil)
    }

    @Test func anIDNoDocumentCanHavePurgesNothing() throws {
        let outcome = try db.purge([(docID: "", revs: [r("1-a")]), (docID: "_bad", revs: [r("1-a")])])
        #expect(outcome.results.map(\.purged) == [[], []])
        #expect(try db.info().purgeSeq == 2 && db.info().updateSeq == 0)
    }
}
