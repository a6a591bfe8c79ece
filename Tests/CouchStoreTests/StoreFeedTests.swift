import Foundation
import RevTreeTestSupport
import Testing

@testable import CouchStore

/// What `_bulk_docs`, `_changes` and `_all_docs` need of the store beyond plain reads and writes: batches that fail
/// whole, pages in both directions, and `sizes.external` that counts attachment bytes.
@Suite struct StoreFeedTests {
    let store: Store
    let db: Database

    init() throws {
        store = try Store(directory: temporaryDirectory())
        db = try store.create("db")
    }

    static let attachment = AttachmentInfo(
        name: "a.bin", contentType: "application/octet-stream", digest: "md5-x", length: 1000, revpos: 1,
        blobKey: "k1")

    // MARK: abortOnInvalid

    @Test(arguments: [false, true])
    func aMissingStubAbortsTheWholeBatch(replicatedWrites: Bool) throws {
        let good = RevisionWrite(docID: "good", path: replicatedWrites ? [r("1-a")] : [], body: body("{}"))
        let stub = RevisionWrite(
            docID: "stub", path: replicatedWrites ? [r("1-a")] : [], body: body("{}"),
            attachments: [.stub(name: "a.bin", revpos: nil, digest: nil)])
        #expect(throws: BatchAborted(docID: "stub", error: .missingStub("a.bin"))) {
            replicatedWrites
                ? try db.applyReplicated([good, stub], abortOnInvalid: true)
                : try db.applyEdits([good, stub], abortOnInvalid: true)
        }
        #expect(try db.document("good") == nil && db.document("stub") == nil)
        #expect(db.updateSeq == 0)
        #expect(try db.info().docCount == 0)
        // Without the option the good document is written and the stub fails alone.
        let results = try db.applyEdits(
            [good, stub].map {
                RevisionWrite(
                    docID: $0.docID, path: [], body: $0.body,
                    attachments: $0.attachments)
            })
        #expect((try? results[0].result.get()) != nil)
        #expect(throws: StoreError.missingStub("a.bin")) { try results[1].result.get() }
    }

    @Test func conflictsStayPerDocumentResultsOfAnAbortingBatch() throws {
        let first = try db.applyEdits([RevisionWrite(docID: "a", path: [], body: body("{}"))])[0].result.get()
        let results = try db.applyEdits(
            [
                RevisionWrite(docID: "a", path: [], body: body("{\"again\":1}")),
                RevisionWrite(docID: "b", path: [], body: body("{}")),
            ], abortOnInvalid: true)
        #expect(throws: StoreError.conflict) { try results[0].result.get() }
        #expect((try? results[1].result.get()) != nil)
        #expect(try db.document("a")?.winner == first)
    }

    @Test func anInvalidRevAbortsBeforeTheWriterRuns() throws {
        let bad = RevisionWrite(docID: "x", path: [r("2-b"), r("5-a")], body: body("{}"))
        let good = RevisionWrite(docID: "good", path: [r("1-a")], body: body("{}"))
        #expect(throws: BatchAborted(docID: "x", error: .invalidRev)) {
            try db.applyReplicated([good, bad], abortOnInvalid: true)
        }
        #expect(try db.document("good") == nil)
    }

    // MARK: Pages

    @Test func descendingPagesWalkEveryRowOnce() throws {
        for i in 0..<25 { _ = try db.applyReplicated([replicated("d\(i)", "1-a")]) }
        _ = try db.applyReplicated([replicated("d3", "1-a", "2-b")])
        var seqs = [Int]()
        var before = Int.max
        while true {
            var page = [Int]()
            try db.changes(before: before, limit: 7) {
                page.append($0.seq)
                return true
            }
            seqs += page
            guard let last = page.last else { break }
            before = last
        }
        var ascending = [Int]()
        try db.changes(since: 0, limit: nil, descending: false) {
            ascending.append($0.seq)
            return true
        }
        #expect(seqs == ascending.reversed())
        #expect(seqs.count == 25 && seqs.first == 26)
    }

    @Test(arguments: [false, true])
    func allDocsPagesAfterARowWithAnExclusiveStart(descending: Bool) throws {
        let ids = (0..<12).map { "id\($0 < 10 ? "0" : "")\($0)" }
        for id in ids { _ = try db.applyReplicated([replicated(id, "1-a")]) }
        var seen = [String]()
        var after: String?
        while true {
            var page = [String]()
            try db.allDocs(
                startKey: after, inclusiveStart: after == nil, endKey: nil, inclusiveEnd: true, descending: descending,
                skip: 0, limit: 5
            ) {
                page.append($0.id)
                return true
            }
            seen += page
            guard let last = page.last, page.count == 5 else { break }
            after = last
        }
        #expect(seen == (descending ? ids.reversed() : ids))
    }

    // MARK: sizes.external

    @Test func externalSizeCountsTheAttachmentsOfLeaves() throws {
        _ = try db.applyReplicated([replicated("p", "1-a", atts: [.stored(StoreFeedTests.attachment)])])
        let leafBody = body("{\"v\":\"1-a\"}").count
        #expect(try db.info().externalSize == leafBody + 1000)
        // A child keeping the attachment as a stub replaces the leaf: still counted once.
        _ = try db.applyReplicated([
            replicated("p", "1-a", "2-b", atts: [.stub(name: "a.bin", revpos: 1, digest: nil)])
        ])
        #expect(try db.info().externalSize == body("{\"v\":\"2-b\"}").count + 1000)
        // A gzip-encoded attachment counts its stored (encoded) bytes, as CouchDB's `att_len`.
        var gzipped = StoreFeedTests.attachment
        gzipped.name = "z.txt"
        gzipped.encoding = "gzip"
        gzipped.encodedLength = 40
        _ = try db.applyReplicated([replicated("z", "1-a", atts: [.stored(gzipped)])])
        #expect(try db.info().externalSize == body("{\"v\":\"2-b\"}").count + 1000 + leafBody + 40)
        // Deleting drops the attachment bytes with the leaf that carried them.
        _ = try db.applyReplicated([replicated("p", "1-a", "2-b", "3-c", deleted: true)])
        #expect(try db.info().externalSize == body("{\"v\":\"3-c\"}").count + leafBody + 40)
    }

    @Test func version3FileRecountsExternalSizesWithAttachments() throws {
        let directory = temporaryDirectory()
        do {
            let old = try Store(directory: directory)
            let database = try old.create("old")
            _ = try database.applyReplicated([
                replicated("p", "1-a", atts: [.stored(StoreFeedTests.attachment)]), replicated("q", "1-a"),
            ])
            _ = try database.applyReplicated([replicated("p", "1-a", "2-b", atts: [.stored(StoreFeedTests.attachment)])]
            )
            old.close()
        }
        // Rewrite the file as version 3 left it: body references and `external_size` count bodies only (every body
        // here is under 1,000 bytes and every attachment exactly 1,000, so `% 1000` leaves the body's share).
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.hasSuffix(Store.suffix) }
        #expect(files.count == 1)
        let file = directory + "/" + (files.first ?? "")
        do {
            let connection = try SQLiteConnection(path: file, readOnly: false, create: false)
            let read = try connection.prepare("SELECT seq, tree FROM documents")
            var rows = [(Int, StoredTree)]()
            while try read.step() { rows.append((read.int(0), try read.withBlob(1) { try RowCodec.decodeTree($0) })) }
            read.reset()
            var external = 0
            for (seq, var stored) in rows {
                for index in stored.bodies.indices {
                    guard let ref = stored.bodies[index] else { continue }
                    stored.bodies[index] = BodyRef(seq: ref.seq, externalSize: ref.externalSize % 1000)
                }
                external += stored.leafBodyBytes
                try connection.run(
                    "UPDATE documents SET tree = ? WHERE seq = ?", [.blob(RowCodec.encodeTree(stored)), .int(seq)])
            }
            try connection.run("UPDATE db_meta SET external_size = ?", [.int(external)])
            // Nor had version 3 what version 5 added (the purge log).
            try connection.execute("ALTER TABLE db_meta DROP COLUMN purged_infos_limit; DROP TABLE purge_log")
            try connection.execute("PRAGMA user_version = 3")
        }
        let reopened = try Store(directory: directory)
        defer { reopened.close() }
        let database = try reopened.open("old")
        let expected = body("{\"v\":\"2-b\"}").count + 1000 + body("{\"v\":\"1-a\"}").count
        #expect(try database.info().externalSize == expected)
        // The recounted references carry on: a deletion takes exactly its leaf's share away.
        _ = try database.applyReplicated([replicated("p", "1-a", "2-b", "3-c", deleted: true)])
        #expect(try database.info().externalSize == body("{\"v\":\"3-c\"}").count + body("{\"v\":\"1-a\"}").count)
    }
}

/// `_local_docs` reads (`Database.localDocuments`): id order both ways, the bounds, skip and limit, and paging
/// through 20,000 of them one call per page, with memory and time per call flat.
@Suite struct LocalDocumentListingTests {
    let store: Store
    let db: Database

    init() throws {
        store = try Store(directory: temporaryDirectory())
        db = try store.create("db")
    }

    private func ids(
        start: String? = nil, inclusiveStart: Bool = true, end: String? = nil, inclusiveEnd: Bool = true,
        descending: Bool = false, skip: Int = 0, limit: Int? = nil
    ) throws -> [String] {
        var found: [String] = []
        try db.localDocuments(
            startKey: start, inclusiveStart: inclusiveStart, endKey: end, inclusiveEnd: inclusiveEnd,
            descending: descending, skip: skip, limit: limit
        ) { id, _, _ in
            found.append(id)
            return true
        }
        return found
    }

    @Test func boundsSkipLimitAndDirection() throws {
        for name in ["b", "a", "c", "B", "é"] { _ = try db.putLocal("_local/" + name, body: body("{}")) }
        _ = try db.putLocal("_local/a", body: body("{\"v\":2}"), rev: 1)
        #expect(try ids() == ["_local/B", "_local/a", "_local/b", "_local/c", "_local/é"])  // bytes, not collation
        #expect(try ids(descending: true, limit: 2) == ["_local/é", "_local/c"])
        #expect(try ids(start: "_local/a", inclusiveStart: false, end: "_local/c", inclusiveEnd: false) == ["_local/b"])
        #expect(try ids(start: "_local/c", end: "_local/a", descending: true, skip: 1) == ["_local/b", "_local/a"])
        #expect(try ids(limit: 0).isEmpty && ids(skip: 99).isEmpty && ids(limit: -1).count == 5)
        var revs: [Int] = []
        try db.localDocuments(
            startKey: "_local/a", endKey: "_local/a", inclusiveEnd: true, descending: false, skip: 0,
            limit: nil
        ) { _, rev, _ in
            revs.append(rev)
            return true
        }
        #expect(revs == [2])
    }

    @Test func pagingThroughTwentyThousandStaysFlat() throws {
        for n in 0..<20_000 { _ = try db.putLocal("_local/\(100_000 + n)", body: body("{\"n\":\(n)}")) }
        var after: String?
        var seen = 0
        var timings: [Duration] = []
        var resident: [Int] = []
        let clock = ContinuousClock()
        while true {
            var page: [String] = []
            let took = try clock.measure {
                try db.localDocuments(
                    startKey: after, inclusiveStart: after == nil, endKey: nil, inclusiveEnd: true, descending: false,
                    skip: 0, limit: 10
                ) { id, _, _ in
                    page.append(id)
                    return true
                }
            }
            timings.append(took)
            if seen % 2_000 == 0 { resident.append(residentBytes()) }
            guard let last = page.last else { break }
            #expect(after.map { $0.utf8.lexicographicallyPrecedes(page[0].utf8) } ?? true)
            seen += page.count
            after = last
        }
        #expect(seen == 20_000)
        // The last pages cost what the first did (no scan from the start), and the heap does not grow with pages.
        let early = timings.prefix(200).sorted()[100]
        let late = timings.suffix(200).sorted()[100]
        #expect(late < early * 5 + .milliseconds(1), "median page \(early) at first, \(late) at the end")
        #expect((resident.last ?? 0) - (resident.first ?? 0) < 32 * 1024 * 1024, "\(resident)")
    }

    private func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
