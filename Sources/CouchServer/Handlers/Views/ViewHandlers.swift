import CouchQuery
import CouchStore
import CouchWire
import Foundation
import RevTree

/// The views of design documents: `GET/POST /db/_design/d/_view/v`, `GET /db/_design/d/_info` and
/// `POST /db/_view_cleanup`.
struct ViewHandlers: Sendable {
    /// The databases' view indexes, and the engine that runs their JavaScript.
    let views: ViewIndexes

    /// Rows read per index call.
    static let pageSize = 500

    /// `GET/POST /db/_design/d/_view/v`: the index is brought up to date (unless `update=false`/`stale`), then
    /// rows are read a page at a time and sent as they are rendered, so a query over a million rows holds one
    /// page. Map output is CouchDB's `{"total_rows","offset","rows":[{"id","key","value","doc"?}]}`; reduce
    /// output `{"rows":[{"key","value"}]}`, grouped by `group`/`group_level`.
    package func query(_ c: RequestContext) throws -> Response {
        let (design, view) = (try c.parameter("design"), try c.parameter("view"))
        return .stream(.ok) { stream in
            var output = ViewOutput(FeedWriter(stream))
            try query(c, design: design, view: view, into: &output)
        }
    }

    /// `POST /db/_design/d/_view/v/queries` (`MultiQuery`): every query is read and checked against the view
    /// before the first is answered, so a bad one is a clean 400.
    func queries(_ c: RequestContext) throws -> Response {
        let (design, view) = (try c.parameter("design"), try c.parameter("view"))
        let group = try ViewGroup.load(try c.database(), design: design)
        guard let (_, definition) = group.view(named: view) else { throw CouchError.notFound("missing_named_view") }
        let queries = try MultiQuery.queries(c.request)
        for query in queries {
            _ = try ViewQuery(c.request, body: query).validate(isReduceView: definition.reduce != nil)
        }
        guard !queries.isEmpty else { return MultiQuery.noResults() }
        return .stream(.ok) { stream in
            for (index, query) in queries.enumerated() {
                var output = ViewOutput(FeedWriter(stream), part: ResultPart(index: index, count: queries.count))
                try self.query(
                    c, design: design, view: view, parameters: { try ViewQuery($0, body: query) }, into: &output)
            }
        }
    }

    /// Runs the query of `c` over `design`'s `view`, sending the rows to `output`.
    func query(_ c: RequestContext, design: String, view: String, into output: inout some ViewRowSink) throws {
        try query(c, design: design, view: view, parameters: { try ViewQuery($0) }, into: &output)
    }

    /// Runs the query of `c`, whose POST body was already read as `body` (a list's), over `design`'s `view`,
    /// sending the rows to `output`.
    func query(
        _ c: RequestContext, design: String, view: String, body: JSONObject?, into output: inout some ViewRowSink
    ) throws {
        try query(c, design: design, view: view, parameters: { try ViewQuery($0, body: body) }, into: &output)
    }

    /// The parameters are read once the view is known to exist (a missing view is 404 whatever they say).
    private func query(
        _ c: RequestContext, design: String, view: String, parameters: (Request) throws -> ViewQuery,
        into output: inout some ViewRowSink
    ) throws {
        let database = try c.database()
        let group = try ViewGroup.load(database, design: design)
        guard let (number, definition) = group.view(named: view) else {
            throw CouchError.notFound("missing_named_view")
        }
        let query = try parameters(c.request)
        let reduces = try query.validate(isReduceView: definition.reduce != nil)
        if let reduce = definition.reduce, reduce.hasPrefix("_"), definition.builtin == nil {
            throw CouchError.badRequest("Unknown builtin reduce function: \(reduce)")
        }
        let index = try views.index(database, group)
        let engine = views.engine(for: group)
        if query.update == .yes { try index.update(database, engine: engine, to: database.updateSeq) }
        do {
            if reduces {
                try reduceRows(index, number, definition, query, engine, &output)
            } else {
                try mapRows(index, number, query, database, &output)
            }
        } catch is ViewRowsStop {
            try output.finish()
        }
        if query.update == .lazy {
            let target = database.updateSeq
            Thread.detachNewThread { try? index.update(database, engine: engine, to: target) }
        }
    }

    // MARK: Map

    private func mapRows(
        _ index: ViewIndex, _ view: Int, _ query: ViewQuery, _ database: Database, _ output: inout some ViewRowSink
    ) throws {
        let total = try index.file.rowCount(view: view)
        let firstScan = query.scan(view: view, key: query.keys?.first)
        let before = try index.file.rowsBefore(firstScan)
        var head: [UInt8] = Array("{\"total_rows\":\(total),\"offset\":\(min(before + query.skip, total))".utf8)
        if query.updateSeq { appendUpdateSeq(index, &head) }
        head += Array(",\"rows\":[\r\n".utf8)
        try output.start(head)
        var skip = query.skip
        var remaining = query.limit ?? Int.max
        let scans = query.keys.map { keys in keys.map { query.scan(view: view, key: $0) } } ?? [firstScan]
        for scan in scans where remaining > 0 {
            var cursor: ViewRow?
            while remaining > 0 {
                // No more rows than the answer can still use (`limit=1` reads one row, not a page).
                let size =
                    remaining >= ViewHandlers.pageSize || skip >= ViewHandlers.pageSize
                    ? ViewHandlers.pageSize : min(ViewHandlers.pageSize, remaining + skip)
                var page: [ViewRow] = []
                try index.file.rows(scan, after: cursor, limit: size) { row in
                    page.append(row)
                    return true
                }
                for row in page {
                    if skip > 0 {
                        skip -= 1
                        continue
                    }
                    guard remaining > 0 else { break }
                    remaining -= 1
                    try output.row(try mapRow(row, query, database))
                }
                guard let last = page.last, page.count == size else { break }
                cursor = last
            }
        }
        try output.finish()
    }

    /// One `{"id","key","value"}` row, with `doc` for `include_docs` (the emitting document, or the one a value
    /// `{"_id":…}` links to; null when it is missing or deleted).
    private func mapRow(_ row: ViewRow, _ query: ViewQuery, _ database: Database) throws -> [UInt8] {
        var bytes: [UInt8] = Array("{\"id\":".utf8)
        JSON.appendQuoted(row.docID, to: &bytes)
        bytes += Array(",\"key\":".utf8)
        bytes += row.key
        bytes += Array(",\"value\":".utf8)
        bytes += row.value
        if query.includeDocs {
            bytes += Array(",\"doc\":".utf8)
            var id = row.docID
            var rev: RevID?
            if row.value.first == UInt8(ascii: "{"), let value = try? JSON.parse(row.value),
                let linked = value["_id"]?.stringValue
            {
                id = linked
                rev = value["_rev"]?.stringValue.flatMap { try? DocumentInput.parseRev($0) }
            }
            var options = query.render
            options.conflicts = query.conflicts == true
            // Attachment bodies are not inlined into view rows: they stay stubs (`attachments=true` is accepted).
            options.attachments = false
            if let info = try database.document(id), rev != nil || !info.deleted,
                let revision = try database.revision(id, rev: rev), !revision.deleted
            {
                let renderer = DocumentRenderer(id: id, info: info, options: options, inline: nil)
                JSON.object(try renderer.render(revision)).serialize(into: &bytes)
            } else {
                bytes += Array("null".utf8)
            }
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private func appendUpdateSeq(_ index: ViewIndex, _ head: inout [UInt8]) {
        head += Array(",\"update_seq\":".utf8)
        Seq.json(index.file.updateSeq).serialize(into: &head)
    }

    // MARK: Reduce

    private func reduceRows(
        _ index: ViewIndex, _ view: Int, _ definition: ViewDefinition, _ query: ViewQuery, _ engine: any ViewEngine,
        _ output: inout some ViewRowSink
    ) throws {
        var head: [UInt8] = Array("{".utf8)
        if query.updateSeq {
            appendUpdateSeq(index, &head)
            head.remove(at: 1)  // the comma `appendUpdateSeq` puts first
            head += Array(",".utf8)
        }
        head += Array("\"rows\":[\r\n".utf8)
        try output.defer(head)
        let level = try query.groupLevel()
        var skip = query.skip
        var remaining = query.limit ?? Int.max
        var reduction = Reduction(definition: definition, group: index.group, view: view, engine: engine)
        let needsKey = level != .none || definition.builtin == nil || definition.builtin == .approxCountDistinct
        var groupKey: (sortKey: [UInt8], json: JSON)?
        func emitGroup() throws {
            guard let key = groupKey else { return }
            defer { groupKey = nil }
            let value = try reduction.finish()
            reduction = Reduction(definition: definition, group: index.group, view: view, engine: engine)
            if skip > 0 {
                skip -= 1
                return
            }
            guard remaining > 0 else { return }
            remaining -= 1
            let row = JSON.object(JSONObject([("key", level == .none ? .null : key.json), ("value", value)]))
            try output.row(row.serialized())
        }
        let scans = query.keys.map { keys in keys.map { query.scan(view: view, key: $0) } } ?? [query.scan(view: view)]
        for scan in scans where remaining > 0 {
            // Whole chunks inside the range come with their stored partial; the rest as rows.
            try index.file.fold(scan) { item in
                switch item {
                case .row(let row):
                    // Keys are parsed only when something looks at them (groups, distinct counts, JavaScript).
                    let key = needsKey ? try JSON.parse(row.key) : .null
                    let grouped = ViewHandlers.groupKey(key, row.sortKey, level)
                    if let current = groupKey, current.sortKey != grouped.sortKey { try emitGroup() }
                    guard remaining > 0 else { return .stop }
                    if groupKey == nil { groupKey = grouped }
                    try reduction.add(key: key, docID: row.docID, value: row.value)
                    return .next
                case .chunk(let chunk):
                    // Taken whole when its first and last rows fall in one group; the group's key is that of its
                    // first row in the scan's order, as row by row.
                    guard let grouped = try ViewHandlers.chunkGroup(chunk, level, descending: scan.descending) else {
                        return .expand
                    }
                    if let current = groupKey, current.sortKey != grouped.sortKey { try emitGroup() }
                    guard remaining > 0 else { return .stop }
                    guard try reduction.merge(partial: chunk.partial) else { return .expand }
                    if groupKey == nil { groupKey = grouped }
                    return .next
                }
            }
            // Each key of `keys` is its own group, even when two keys collate alike.
            if query.keys != nil { try emitGroup() }
        }
        try emitGroup()
        try output.finish()
    }

    /// The group all of `chunk` falls in, nil when its rows span two groups.
    private static func chunkGroup(_ chunk: ViewChunk, _ level: ViewQuery.GroupLevel, descending: Bool) throws
        -> (sortKey: [UInt8], json: JSON)?
    {
        switch level {
        case .none:
            return ([], .null)
        case .exact:
            guard chunk.firstSortKey == chunk.lastSortKey else { return nil }
            return (chunk.firstSortKey, try JSON.parse(descending ? chunk.lastKey : chunk.firstKey))
        case .level:
            let first = groupKey(try JSON.parse(chunk.firstKey), chunk.firstSortKey, level)
            let last = groupKey(try JSON.parse(chunk.lastKey), chunk.lastSortKey, level)
            guard first.sortKey == last.sortKey else { return nil }
            return descending ? last : first
        }
    }

    /// The key a row is grouped under: nothing (one group), the whole key, or an array key's first `n` elements.
    private static func groupKey(_ key: JSON, _ sortKey: [UInt8], _ level: ViewQuery.GroupLevel)
        -> (sortKey: [UInt8], json: JSON)
    {
        switch level {
        case .none: return ([], .null)
        case .exact: return (sortKey, key)
        case .level(let n):
            guard case .array(let items) = key, items.count > n else { return (sortKey, key) }
            let prefix = JSON.array(Array(items.prefix(n)))
            return (ViewCollation.sortKey(prefix), prefix)
        }
    }
}

extension ViewHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route([.POST], "/{db}/_view_cleanup", .maintenanceAdmin, body: .small, cleanup),
            Route(read, "/{db}/_design/{design}/_view/{view}", .member, notAllowedReason: "GET,POST,HEAD", query),
            Route([.POST], "/{db}/_design/{design}/_view/{view}", .member, body: .bulk, query),
            Route(
                [.POST], "/{db}/_design/{design}/_view/{view}/queries", .member, body: .bulk, notAllowedReason: "POST",
                queries),
            Route([.GET], "/{db}/_design/{design}/_info", .member, info),
            Route(HTTPMethod.allCases, "/{db}/_design/{design}/_view", .member) { _ in
                throw CouchError.notFound("missing")
            },
            Route(HTTPMethod.allCases, "/{db}/_design/{design}/_view/{view}/{path…}", .member) { _ in
                throw CouchError.notFound("missing")
            },
        ]
    }
}
