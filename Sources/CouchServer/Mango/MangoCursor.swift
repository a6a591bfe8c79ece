import CouchQuery
import CouchStore
import CouchWire
import Foundation

/// Runs a planned `_find` and streams its answer: rows are read a page at a time from `_all_docs` or the json
/// index, each page's documents are loaded, matched against the whole selector, and sent as they pass, so memory
/// stays one page whatever the database or the result's size. The framing is CouchDB's (`{"docs":[\r\n` …
/// `,\r\n` … `\r\n],\r\n"bookmark": "…"` then `execution_stats` and `warning` when there are any).
struct MangoCursor {
    let database: Database
    let options: FindOptions
    let plan: MangoPlan
    let views: ViewIndexes
    /// CPU time the `$regex` matches of this request may take together (``RegexBudget``).
    var regexBudgetNanoseconds = RegexBudget.defaultNanoseconds

    /// Rows read per store call.
    /// How often, at most, the scan looks whether its client is still there (a `poll` of the socket).
    static let livenessInterval = Duration.milliseconds(10)
    static let pageSize = 500
    /// `mango.index_scan_warning_threshold`: more documents examined per result than this is worth a warning.
    static let scanWarningRatio = 10.0

    /// What the scan counted (`execution_stats`).
    struct Stats {
        var keysExamined = 0
        var docsExamined = 0
        var returned = 0
    }

    /// A candidate row: its document id, its index key (for the bookmark) and, for a covering index, the
    /// document built from the key.
    struct Row {
        var docID: String
        var key: JSON
        var covered: JSON?
    }

    /// Writes the `_find` response's body into `stream`.
    func run(_ stream: ResponseStream) throws {
        let started = DispatchTime.now()
        let bookmark = try options.bookmark.map { text throws(CouchError) in try MangoBookmark(decoding: text) }
        guard plan.ranges != nil else {
            // An empty range or an empty `$or`/`$and`: CouchDB answers without searching, and without a bookmark.
            var out = FeedWriter(stream)
            try out.append("{\"docs\":[\r\n]}\r\n\n")
            return try out.send()
        }
        let source = try MangoRowSource(database: database, options: options, plan: plan, views: views)
        var out = FeedWriter(stream)
        try out.append("{\"docs\":[\r\n")
        var stats = Stats()
        var skip = options.skip
        var last: MangoBookmark?
        var returned = 0
        let budget = RegexBudget(nanoseconds: regexBudgetNanoseconds)
        var lookedAt: ContinuousClock.Instant?
        if options.limit > 0 {
            try source.scan(after: bookmark, stats: &stats) { row, document in
                let matched = options.selector.matches(document, budget: budget)
                // A spent budget makes every `$regex` false, so `matched` means nothing: the request fails.
                if budget.isSpent { throw MangoCursor.regexBudgetSpent(budget) }
                // A client that left (or a stop that cut the connection) ends the scan between documents.
                let now = ContinuousClock.now
                if lookedAt.map({ now - $0 >= MangoCursor.livenessInterval }) ?? true {
                    lookedAt = now
                    if stream.isPeerClosed() { throw HTTPError.clientGone }
                }
                guard matched else { return true }
                if skip > 0 {
                    skip -= 1
                    return true
                }
                if returned > 0 { try out.append(",\r\n") }
                returned += 1
                try out.append(MangoFields.extract(document, options.fields).serialized())
                last = MangoBookmark(key: row.key, docID: row.docID)
                return returned < options.limit
            }
        }
        stats.returned = returned
        var tail = returned > 0 ? "\r\n],\r\n\"bookmark\": " : "],\r\n\"bookmark\": "
        tail += JSON.string(last?.encoded ?? options.bookmark ?? "nil").serializedString
        if options.executionStats {
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000
            let object = JSONObject([
                ("total_keys_examined", .int(stats.keysExamined)), ("total_docs_examined", .int(stats.docsExamined)),
                ("total_quorum_docs_examined", 0), ("results_returned", .int(stats.returned)),
                ("execution_time_ms", JSON.double((elapsed * 1000).rounded() / 1000)),
            ])
            tail += ",\r\n\"execution_stats\": " + JSON.object(object).serializedString
        }
        var warnings = plan.warnings
        let ratio = Double(stats.docsExamined) / Double(max(stats.returned, 1))
        if ratio > MangoCursor.scanWarningRatio {
            warnings.append(
                "The number of documents examined is high in proportion to the number of results returned. "
                    + "Consider adding a more specific index to improve this.")
        }
        if !warnings.isEmpty {
            tail += ",\r\n\"warning\": " + JSON.string(warnings.joined(separator: "\n")).serializedString
        }
        tail += "}\r\n\n"
        try out.append(tail)
        try out.send()
    }

    /// CouchDB's answer to a query that takes too long (chttpd's `error_info(timeout)`: 500 `timeout`), naming
    /// what ran out.
    static func regexBudgetSpent(_ budget: RegexBudget) -> CouchError {
        let milliseconds = budget.nanoseconds / 1_000_000
        return .mango(
            "timeout",
            "The request could not be processed in a reasonable amount of time: its $regex matches took more than "
                + "\(milliseconds) ms of CPU.", status: 500)
    }
}

/// The rows a plan reads, in the order the answer needs, with their documents.
struct MangoRowSource {
    let database: Database
    let options: FindOptions
    let plan: MangoPlan
    let views: ViewIndexes
    private let view: (index: ViewIndex, number: Int)?

    init(database: Database, options: FindOptions, plan: MangoPlan, views: ViewIndexes) throws {
        self.database = database
        self.options = options
        self.plan = plan
        self.views = views
        guard let designID = plan.index.designID else {
            view = nil
            return
        }
        let group = try ViewGroup.load(database, design: String(designID.dropFirst("_design/".count)))
        guard let (number, _) = group.view(named: plan.index.name) else {
            throw CouchError.notFound("missing_named_view")
        }
        let index = try views.index(database, group)
        if options.update && !options.stale {
            try index.update(database, engine: views.engine(for: group), to: database.updateSeq)
        }
        view = (index, number)
    }

    /// Calls `body` with each row and its document until it returns false or the rows run out.
    func scan(
        after bookmark: MangoBookmark?, stats: inout MangoCursor.Stats, _ body: (MangoCursor.Row, JSON) throws -> Bool
    )
        throws
    {
        if let view {
            try scanIndex(view.index, view.number, after: bookmark, stats: &stats, body)
        } else {
            try scanAllDocs(after: bookmark, stats: &stats, body)
        }
    }

    /// The first page is no bigger than the answer can use (`limit=1` reads one row when it matches).
    private var firstPageSize: Int {
        let wanted = options.limit.addingReportingOverflow(options.skip)
        return wanted.overflow ? MangoCursor.pageSize : max(1, min(MangoCursor.pageSize, wanted.partialValue))
    }

    // MARK: _all_docs

    private func scanAllDocs(
        after bookmark: MangoBookmark?, stats: inout MangoCursor.Stats, _ body: (MangoCursor.Row, JSON) throws -> Bool
    ) throws {
        let descending = options.sort.descending
        let range = plan.ranges?.first
        var low = range.flatMap { if case .value(.string(let id)) = $0.low { id } else { nil } }
        var high = range.flatMap { if case .value(.string(let id)) = $0.high { id } else { nil } }
        if descending { swap(&low, &high) }
        var after = bookmark?.docID
        var size = firstPageSize
        while true {
            var page: [DocumentInfo] = []
            try database.allDocs(
                startKey: after ?? low, inclusiveStart: after == nil, endKey: high, inclusiveEnd: true,
                descending: descending, skip: 0, limit: size
            ) { info in
                page.append(info)
                return true
            }
            let rows = page.filter { !$0.id.hasBytePrefix("_design/") }.map {
                MangoCursor.Row(docID: $0.id, key: .string($0.id), covered: nil)
            }
            guard try deliver(rows, stats: &stats, body) else { return }
            guard let last = page.last, page.count == size else { return }
            after = last.id
            size = MangoCursor.pageSize
        }
    }

    // MARK: json index

    private func scanIndex(
        _ index: ViewIndex, _ number: Int, after bookmark: MangoBookmark?, stats: inout MangoCursor.Stats,
        _ body: (MangoCursor.Row, JSON) throws -> Bool
    ) throws {
        let descending = options.sort.descending
        var low = ViewBound(
            sortKey: ViewCollation.sortKey(.array(plan.startKey)), docID: nil, inclusive: true)
        var endBytes = ViewCollation.sortKey(.array(plan.endKey))
        endBytes.removeLast()  // the array's terminator: `<MAX>` sorts after every element
        endBytes.append(0xFF)
        var high = ViewBound(sortKey: endBytes, docID: nil, inclusive: true)
        if let bookmark {
            let resume = ViewBound(
                sortKey: ViewCollation.sortKey(bookmark.key), docID: bookmark.docID, inclusive: false)
            if descending { high = resume } else { low = resume }
        }
        let covering = MangoCandidates.covers(plan.index, fields: options.fields, selector: options.selector.normalized)
        let scan = ViewScan(view: number, low: low, high: high, descending: descending)
        var cursor: ViewRow?
        var size = firstPageSize
        while true {
            var page: [ViewRow] = []
            try index.file.rows(scan, after: cursor, limit: size) { row in
                page.append(row)
                return true
            }
            let rows = page.map { row in
                let key = (try? JSON.parse(row.key)) ?? .null
                var result = MangoCursor.Row(docID: row.docID, key: key, covered: nil)
                if covering { result.covered = coveredDocument(row.docID, key) }
                return result
            }
            guard try deliver(rows, stats: &stats, body) else { return }
            guard let last = page.last, page.count == size else { return }
            cursor = last
            size = MangoCursor.pageSize
        }
    }

    /// The document a covering index gives: `_id` and the indexed fields from the key.
    private func coveredDocument(_ docID: String, _ key: JSON) -> JSON {
        var document = JSON.object(JSONObject([("_id", .string(docID))]))
        for (column, value) in zip(plan.index.columns, key.arrayValue ?? []) {
            document = MangoFields.merge(document, path: Selector.splitFieldPath(column), value)
        }
        return document
    }

    // MARK: Documents

    /// Loads a page's documents and hands each row to `body`; false when `body` has had enough.
    private func deliver(
        _ rows: [MangoCursor.Row], stats: inout MangoCursor.Stats,
        _ body: (MangoCursor.Row, JSON) throws -> Bool
    ) throws -> Bool {
        if rows.allSatisfy({ $0.covered != nil }) {
            for row in rows {
                stats.keysExamined += 1
                guard let covered = row.covered else { continue }
                guard try body(row, covered) else { return false }
            }
            return true
        }
        let revisions = try database.winningRevisions(rows.map(\.docID))
        for (row, revision) in zip(rows, revisions) {
            stats.keysExamined += 1
            guard let revision, !revision.deleted else { continue }
            stats.docsExamined += 1
            var render = RenderOptions()
            render.conflicts = options.conflicts
            let info = options.conflicts ? try database.document(row.docID) : nil
            let document = try DocumentRenderer(id: row.docID, info: info, options: render, inline: nil).render(
                revision)
            guard try body(row, .object(document)) else { return false }
        }
        return true
    }
}
