import Foundation
import Testing

@testable import CouchStore

/// The chunked partial reductions of a view index (`ViewIndexFile+Chunks`), with a reducer that stores
/// "count sum" of integer values: after any sequence of inserts and deletions the incrementally kept chunk table
/// must be exactly the one a rebuild from scratch makes, and a fold over any range must hand over exactly the
/// range's rows (as rows, or as whole chunks whose count and sum are theirs) in the scan's order.
@Suite struct ViewChunkTests {
    final class SumReducer: ViewChunkReducer {
        let views: [Int]
        init(views: [Int] = [0, 1]) { self.views = views }

        func fold(view: Int) -> any ViewChunkFold { SumFold() }
    }

    final class SumFold: ViewChunkFold {
        var count = 0
        var sum = 0
        var refused = false

        func add(_ row: ViewRow) {
            guard let value = Int(String(decoding: row.value, as: UTF8.self)) else {
                refused = true
                return
            }
            count += 1
            sum += value
        }

        func finish() -> [UInt8]? { refused ? nil : Array("\(count) \(sum)".utf8) }
    }

    /// One emitted row of the model.
    struct Row: Equatable {
        var view: Int
        var sortKey: [UInt8]
        var docID: String
        var n: Int
        var value: Int

        var key: ViewRowKey { ViewRowKey(sortKey: sortKey, docID: docID, n: n) }
    }

    /// A deterministic generator (the failures must be reproducible).
    struct Random: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            var z = state
            z = (z ^ (z >> 33)) &* 0xff51_afd7_ed55_8ccd
            return z ^ (z >> 33)
        }
    }

    private func temporaryFile() -> String {
        NSTemporaryDirectory() + "/view-chunks-" + UUID().uuidString + "/index.view"
    }

    /// Sort keys from a small alphabet, so that keys tie and doc ids decide.
    private func sortKey(_ random: inout Random) -> [UInt8] {
        let length = Int.random(in: 1...3, using: &random)
        return [UInt8.random(in: 4...5, using: &random)]
            + (0..<length).map { _ in UInt8.random(in: 1...6, using: &random) }
    }

    private func chunkTable(_ file: ViewIndexFile) throws -> [String] {
        try file.read { connection in
            let statement = try connection.prepare(
                "SELECT view, hex(sortkey), docid, n, rows, hex(first_sortkey), first_docid, first_n, hex(first_key), "
                    + "hex(last_sortkey), last_docid, hex(last_key), hex(partial) FROM chunks "
                    + "ORDER BY view, sortkey, docid, n")
            defer { statement.reset() }
            var out: [String] = []
            while try statement.step() {
                out.append((0..<13).map { statement.optionalText(Int32($0)) ?? "NULL" }.joined(separator: "|"))
            }
            return out
        }
    }

    /// The rows of `scan` in the model, in the scan's order.
    private func expected(_ model: [Row], _ scan: ViewScan) -> [Row] {
        let inRange = model.filter { row in
            guard row.view == scan.view else { return false }
            if let low = scan.low, !ViewIndexFile.satisfies(lower: low, row.sortKey, row.docID) { return false }
            if let high = scan.high, !ViewIndexFile.satisfies(upper: high, row.sortKey, row.docID) { return false }
            return true
        }.sorted { $0.key < $1.key }
        return scan.descending ? inRange.reversed() : inRange
    }

    /// Folds `scan`, expanding some chunks, and checks the items against the model; returns how many chunks came
    /// whole.
    @discardableResult
    private func checkFold(
        _ file: ViewIndexFile, _ model: [Row], _ scan: ViewScan, _ random: inout Random,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Int {
        let rows = expected(model, scan)
        var position = 0
        var chunks = 0
        var failure: String?
        try file.fold(scan) { item in
            switch item {
            case .row(let row):
                guard position < rows.count,
                    rows[position].key == ViewRowKey(sortKey: row.sortKey, docID: row.docID, n: row.index),
                    Array(String(rows[position].value).utf8) == row.value
                else {
                    failure = "row \(row.docID)/\(row.index) at \(position) of \(rows.count)"
                    return .stop
                }
                position += 1
                return .next
            case .chunk(let chunk):
                // Some chunks are asked for as rows (as a group boundary inside a chunk does).
                if Int.random(in: 0..<4, using: &random) == 0 { return .expand }
                let span = rows.dropFirst(position).prefix(chunk.rows)
                let ascending = scan.descending ? Array(span.reversed()) : Array(span)
                let partial = String(decoding: chunk.partial, as: UTF8.self)
                guard chunk.rows > 0, span.count == chunk.rows, ascending.first?.sortKey == chunk.firstSortKey,
                    ascending.last?.sortKey == chunk.lastSortKey,
                    partial == "\(chunk.rows) \(span.reduce(0) { $0 + $1.value })"
                else {
                    failure = "chunk of \(chunk.rows) at \(position) of \(rows.count): \(partial)"
                    return .stop
                }
                position += chunk.rows
                chunks += 1
                return .next
            }
        }
        #expect(failure == nil, "\(failure ?? "")", sourceLocation: sourceLocation)
        #expect(position == rows.count, "folded \(position) of \(rows.count) rows", sourceLocation: sourceLocation)
        return chunks
    }

    private func randomBound(_ model: [Row], _ random: inout Random) -> ViewBound? {
        guard Int.random(in: 0..<4, using: &random) > 0 else { return nil }
        // Often exactly a row's key (a chunk boundary lies on a row), sometimes a key no row has.
        let base: (sortKey: [UInt8], docID: String)
        if let row = model.randomElement(using: &random), Bool.random(using: &random) {
            base = (row.sortKey, row.docID)
        } else {
            base = (sortKey(&random), "d\(Int.random(in: 0..<60, using: &random))")
        }
        return ViewBound(
            sortKey: base.sortKey, docID: Bool.random(using: &random) ? base.docID : nil,
            inclusive: Bool.random(using: &random))
    }

    private func randomScan(_ model: [Row], view: Int, _ random: inout Random) -> ViewScan {
        var low = randomBound(model, &random)
        var high = randomBound(model, &random)
        if let l = low, let h = high, h.sortKey.lexicographicallyPrecedes(l.sortKey) { (low, high) = (high, low) }
        return ViewScan(view: view, low: low, high: high, descending: Bool.random(using: &random))
    }

    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func incrementalChunksMatchARebuildAndFoldsMatchTheRows(seed: UInt64) throws {
        var random = Random(state: seed)
        let path = temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let file = try ViewIndexFile(path: path, owner: "db")
        defer { file.close() }
        let reducer = SumReducer()
        var model: [Row] = []
        var seq = 0
        // A first build without chunks, then the one pass that makes them.
        var first: [(docID: String, emits: [ViewEmit], fresh: Bool)] = []
        for i in 0..<400 {
            let docID = "d\(i)"
            var emits: [ViewEmit] = []
            for n in 0..<Int.random(in: 0...3, using: &random) {
                let (view, key, value) = (
                    Int.random(in: 0...1, using: &random), sortKey(&random), Int.random(in: -50...50, using: &random)
                )
                emits.append(ViewEmit(view: view, sortKey: key, key: key, value: Array(String(value).utf8)))
                model.append(Row(view: view, sortKey: key, docID: docID, n: n, value: value))
            }
            first.append((docID, emits, true))
        }
        seq += 1
        try file.apply(first, seq: seq)
        #expect(!file.chunksValid)
        try file.rebuildChunks(reducer)
        #expect(file.chunksValid)
        for round in 0..<30 {
            // A batch of rewritten, deleted and new documents (some emitting the same row again).
            var batch: [(docID: String, emits: [ViewEmit], fresh: Bool)] = []
            var touched = Set<String>()
            for _ in 0..<Int.random(in: 1...25, using: &random) {
                let docID = "d\(Int.random(in: 0..<460, using: &random))"
                guard touched.insert(docID).inserted else { continue }
                let old = model.filter { $0.docID == docID }
                model.removeAll { $0.docID == docID }
                var emits: [ViewEmit] = []
                let count = Int.random(in: 0..<4, using: &random) == 0 ? 0 : Int.random(in: 1...3, using: &random)
                for n in 0..<count {
                    var row = Row(
                        view: Int.random(in: 0...1, using: &random), sortKey: sortKey(&random), docID: docID, n: n,
                        value: Int.random(in: -50...50, using: &random))
                    if let same = old.first(where: { $0.n == n }), Bool.random(using: &random) {
                        row.view = same.view
                        row.sortKey = same.sortKey
                    }
                    emits.append(
                        ViewEmit(
                            view: row.view, sortKey: row.sortKey, key: row.sortKey, value: Array(String(row.value).utf8)
                        ))
                    model.append(row)
                }
                batch.append((docID, emits, false))
            }
            seq += 1
            try file.apply(batch, seq: seq, chunks: reducer)
            #expect(file.chunksValid)
            if round % 5 == 4 {
                let incremental = try chunkTable(file)
                try file.rebuildChunks(reducer)
                #expect(try chunkTable(file) == incremental, "round \(round)")
            }
            for view in 0...1 {
                try checkFold(file, model, ViewScan(view: view, low: nil, high: nil, descending: false), &random)
                for _ in 0..<6 { try checkFold(file, model, randomScan(model, view: view, &random), &random) }
            }
        }
        // The whole view comes mostly as chunks, not rows.
        let whole = try checkFold(file, model, ViewScan(view: 0, low: nil, high: nil, descending: false), &random)
        #expect(whole > 0)
    }

    @Test func emptyAndOneRowViewsAndEveryRowAtTheEdges() throws {
        var random = Random(state: 9)
        let path = temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let file = try ViewIndexFile(path: path, owner: "db")
        defer { file.close() }
        let reducer = SumReducer()
        try file.rebuildChunks(reducer)
        try checkFold(file, [], ViewScan(view: 0, low: nil, high: nil, descending: true), &random)
        let key: [UInt8] = [4, 1]
        let one = ViewEmit(view: 0, sortKey: key, key: key, value: Array("7".utf8))
        try file.apply([("a", [one], false)], seq: 1, chunks: reducer)
        let model = [Row(view: 0, sortKey: key, docID: "a", n: 0, value: 7)]
        for inclusive in [true, false] {
            for docID in [nil, "a", "b"] {
                let bound = ViewBound(sortKey: key, docID: docID, inclusive: inclusive)
                for scan in [
                    ViewScan(view: 0, low: bound, high: nil, descending: false),
                    ViewScan(view: 0, low: nil, high: bound, descending: true),
                    ViewScan(view: 0, low: bound, high: bound, descending: false),
                ] {
                    try checkFold(file, model, scan, &random)
                }
            }
        }
        // Deleting the only row leaves an empty tail chunk and an empty fold.
        try file.apply([("a", [], false)], seq: 2, chunks: reducer)
        try checkFold(file, [], ViewScan(view: 0, low: nil, high: nil, descending: false), &random)
        let incremental = try chunkTable(file)
        try file.rebuildChunks(reducer)
        #expect(try chunkTable(file) == incremental)
    }

    @Test func refusedChunksAndStaleChunksFoldTheirRows() throws {
        var random = Random(state: 5)
        let path = temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let file = try ViewIndexFile(path: path, owner: "db")
        defer { file.close() }
        let reducer = SumReducer(views: [0])
        // A value the reducer refuses: its chunk stores no partial, so its rows come one by one.
        var documents: [(docID: String, emits: [ViewEmit], fresh: Bool)] = []
        for i in 0..<300 {
            let value = i == 150 ? "x" : "1"
            documents.append(("d\(i)", [ViewEmit(view: 0, sortKey: [4, 1], key: [1], value: Array(value.utf8))], true))
        }
        try file.apply(documents, seq: 1)
        try file.rebuildChunks(reducer)
        var items = (rows: 0, chunks: 0, refused: 0)
        try file.fold(ViewScan(view: 0, low: nil, high: nil, descending: false)) { item in
            switch item {
            case .row(let row):
                items.rows += 1
                if row.value == Array("x".utf8) { items.refused += 1 }
            case .chunk: items.chunks += 1
            }
            return .next
        }
        #expect(items.refused == 1)
        #expect(items.chunks > 0)
        // Written without a reducer, the chunks are stale: every row comes as a row, and a reopened file says so.
        try file.apply([("d1", [], false)], seq: 2)
        #expect(!file.chunksValid)
        var rows = 0
        try file.fold(ViewScan(view: 0, low: nil, high: nil, descending: false)) { item in
            if case .row = item { rows += 1 } else { Issue.record("a stale chunk was handed over") }
            return .next
        }
        #expect(rows == 299)
        file.close()
        let reopened = try ViewIndexFile(path: path, owner: "db")
        defer { reopened.close() }
        #expect(!reopened.chunksValid)
        #expect(reopened.updateSeq == 2)
        _ = random.next()
    }

    /// An index written before the chunk table existed (format 1, `user_version` 0) is emptied and rebuilt from
    /// sequence 0, never read as if it had chunks.
    @Test func anOldFormatIndexIsRebuiltNotMisread() throws {
        let path = temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let old = try SQLiteConnection(path: path, readOnly: false, create: true)
        try old.execute(
            """
            CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), owner TEXT NOT NULL, update_seq INTEGER NOT NULL,
              purge_seq INTEGER NOT NULL);
            INSERT INTO meta VALUES (1, 'db', 42, 0);
            CREATE TABLE view_counts (view INTEGER PRIMARY KEY, rows INTEGER NOT NULL);
            INSERT INTO view_counts VALUES (0, 1);
            CREATE TABLE rows (view INTEGER NOT NULL, sortkey BLOB NOT NULL, docid TEXT NOT NULL, n INTEGER NOT NULL,
              key BLOB NOT NULL, value BLOB NOT NULL, PRIMARY KEY (view, sortkey, docid, n)) WITHOUT ROWID;
            INSERT INTO rows VALUES (0, X'0401', 'a', 0, '1', '1');
            """)
        old.close()
        let file = try ViewIndexFile(path: path, owner: "db")
        defer { file.close() }
        #expect(file.updateSeq == 0)
        #expect(!file.chunksValid)
        #expect(try file.rowCount(view: 0) == 0)
    }
}
