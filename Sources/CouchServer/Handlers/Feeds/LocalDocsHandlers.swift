import CouchStore
import CouchWire

/// `GET/POST /db/_local_docs`: the `_local` documents as `_all_docs` rows, as CouchDB's `_local` namespace lists them
/// (`couch_mrview:map_fold/3`): `{"id","key","value":{"rev":"0-N"}}` and `doc` with `include_docs`, `total_rows` and
/// `offset` null, the same key range, `keys`, `skip`, `limit` and `descending`. The cluster's own bookkeeping
/// (`_local/purge-…` with a `purge_seq`, `_local/shard-sync…` with `target_uuid` and `seq`) is left out unless
/// `include_system=true`. Rows are read a bounded page at a time, so no reader is held while the client reads.
struct LocalDocsHandlers: Sendable {
    /// Rows, and body bytes, read per store call.
    static let pageRows = 200
    static let pageBytes = 4 * 1024 * 1024

    func list(_ c: RequestContext) throws -> Response {
        let (database, query) = (try c.database(), try AllDocsQuery(c.request))
        let includeSystem = try c.query.viewBool("include_system")
        return .stream(.ok) { stream in
            var writer = FeedWriter(stream)
            var rows = 0
            func emit(_ row: JSONObject) throws {
                try writer.append(rows == 0 ? "" : ",\r\n")
                try writer.append(JSON.object(row).serialized())
                rows += 1
            }
            try writer.append("{\"total_rows\":null,\"offset\":null,\"rows\":[\r\n")
            if let keys = query.keys {
                var ordered = keys
                if query.range.descending { ordered.reverse() }
                for key in ordered.dropFirst(query.skip).prefix(query.limit ?? Int.max) {
                    let id = key.stringValue.flatMap { $0.hasBytePrefix("_local/") ? $0 : nil }
                    if let id, let local = try database.localDocument(id) {
                        try emit(Self.row(id, local.rev, local.body, includeDocs: query.includeDocs))
                    } else {
                        try emit(JSONObject([("key", key), ("error", "not_found")]))
                    }
                }
            } else {
                try Self.scan(database, query, includeSystem: includeSystem) { id, rev, body in
                    try emit(Self.row(id, rev, body, includeDocs: query.includeDocs))
                }
            }
            try writer.append("\r\n]}\n")
            try writer.send()
        }
    }

    /// Every listed document in range, in pages (skip and limit counted as CouchDB does: over the documents
    /// listed, the bookkeeping ones not among them).
    private static func scan(
        _ database: Database, _ query: AllDocsQuery, includeSystem: Bool,
        _ body: (_ id: String, _ rev: Int, _ body: [UInt8]) throws -> Void
    ) throws {
        let range = query.range
        var (skip, remaining) = (query.skip, query.limit ?? Int.max)
        var after: String?
        while remaining > 0 {
            var page: [(String, Int, [UInt8])] = []
            var bytes = 0
            try database.localDocuments(
                startKey: after ?? range.startKey, inclusiveStart: after == nil, endKey: range.endKey,
                inclusiveEnd: range.inclusiveEnd, descending: range.descending, skip: 0, limit: pageRows
            ) { id, rev, document in
                page.append((id, rev, document))
                bytes += document.count
                return bytes < pageBytes
            }
            for (id, rev, document) in page where includeSystem || !isSystem(id, document) {
                if skip > 0 {
                    skip -= 1
                    continue
                }
                guard remaining > 0 else { return }
                try body(id, rev, document)
                remaining -= 1
            }
            guard let last = page.last, page.count == pageRows || bytes >= pageBytes else { return }
            after = last.0
        }
    }

    /// `couch_mrview:should_skip_local_document/2`.
    static func isSystem(_ id: String, _ body: [UInt8]) -> Bool {
        let purge = id.hasBytePrefix("_local/purge-")
        guard purge || id.hasBytePrefix("_local/shard-sync") else { return false }
        guard case .object(let fields)? = try? JSON.parse(body) else { return false }
        let has = { (name: String) in fields.contains { $0.key.utf8Equals(name) } }
        return purge ? has("purge_seq") : has("target_uuid") && has("seq")
    }

    private static func row(_ id: String, _ rev: Int, _ body: [UInt8], includeDocs: Bool) -> JSONObject {
        var row = JSONObject([("id", .string(id)), ("key", .string(id)), ("value", ["rev": .string("0-\(rev)")])])
        if includeDocs {
            var doc = JSONObject([("_id", .string(id)), ("_rev", .string("0-\(rev)"))])
            if case .object(let fields)? = try? JSON.parse(body) {
                for (key, value) in fields { doc[key] = value }
            }
            row["doc"] = .object(doc)
        }
        return row
    }
}

extension LocalDocsHandlers: RouteCollection {
    package var routes: [Route] {
        [Route([.GET, .HEAD, .POST], "/{db}/_local_docs", .member, body: .bulk, list)]
    }
}
