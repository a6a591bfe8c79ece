import CouchWire
import RevTree

/// The parameters of one `_all_docs` request: view parameters, whose booleans take `true`/`false` in any case
/// (`couch_mrview_http:parse_boolean`).
struct AllDocsQuery {
    var keys: [JSON]?
    var range: KeyRange
    var includeDocs: Bool
    var render = RenderOptions()
    var skip: Int
    var limit: Int?
    var updateSeq: Bool

    init(_ request: Request) throws {
        let query = request.query
        if let keysParam = try query.json("keys") {
            guard let array = keysParam.arrayValue else {
                throw CouchError.badRequest("`keys` parameter must be an array.")
            }
            keys = array
        }
        if request.method == "POST" {
            if let type = request.contentType, type != "application/json" {
                throw CouchError.badContentType("Content-Type must be application/json")
            }
            let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
            if let bodyKeys = body["keys"] {
                guard let array = bodyKeys.arrayValue else {
                    throw CouchError.badRequest("`keys` body member must be an array.")
                }
                keys = array
            }
        }
        range = try KeyRange(query)
        includeDocs = try query.viewBool("include_docs")
        render.conflicts = try query.viewBool("conflicts")
        render.attachments = try query.viewBool("attachments")
        render.attEncodingInfo = try query.viewBool("att_encoding_info")
        skip = try AllDocsQuery.count(query, "skip") ?? 0
        limit = try AllDocsQuery.count(query, "limit")
        updateSeq = try query.viewBool("update_seq")
        // `couch_mrview_util:validate_args`: `keys` with a key range is refused. One key stands for the range
        // [key, key] (`couch_mrview_http:parse_param`), so bounds that repeat it are no conflict.
        if let keys, !keys.isEmpty, range.startKey != nil || range.endKey != nil {
            let single = keys.count == 1 ? keys[0].stringValue : nil
            guard let single, (range.startKey ?? single) == single, (range.endKey ?? single) == single else {
                throw CouchError.queryParseError("`keys` is incompatible with `key`, `start_key` and `end_key`")
            }
        }
    }
}

extension AllDocsQuery {
    /// `couch_mrview_http:parse_pos_int`: an integer, and not negative.
    static func count(_ query: QueryParameters, _ name: String) throws(CouchError) -> Int? {
        guard let value = query[name] else { return nil }
        guard let n = Int(value) else { throw .queryParseError("Invalid value for integer: \"\(value)\"") }
        guard n >= 0 else { throw .queryParseError("Invalid value for positive integer: \"\(value)\"") }
        return n
    }
}

/// `GET/POST /db/_all_docs`, streamed: rows are read a page at a time and each is sent as it is rendered, so
/// memory stays flat whatever the database's size (issue 18 item 9). The framing is CouchDB's
/// (`{"total_rows":…,"offset":…,"rows":[\r\n` … `,\r\n` … `\r\n]}`).
extension App {
    /// Documents read per store call. Rendering (`include_docs`) reads again, so a page is collected first: a
    /// thread holding a reader must not ask the bounded pool for a second one.
    static let allDocsPageSize = 500

    func allDocs(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD", "POST")
        let query = try AllDocsQuery(request)
        let info = try database.info()
        var range = query.range
        var offset: JSON = .null
        if query.keys == nil {
            if range.descending, range.startKey == nil, range.endKey == nil {
                range = KeyRange(descending: true)
            }
            let before =
                try range.startKey.map { try database.liveDocumentCount(before: $0, descending: range.descending) } ?? 0
            offset = .number(JSONNumber(min(before + query.skip, info.docCount)))
        }
        var head: [UInt8] = Array("{\"total_rows\":\(info.docCount),\"offset\":".utf8)
        offset.serialize(into: &head)
        if query.updateSeq {
            head += Array(",\"update_seq\":".utf8)
            Seq.json(info.updateSeq).serialize(into: &head)
        }
        head += Array(",\"rows\":[\r\n".utf8)
        try reply.begin(200)
        var out = FeedWriter(reply: reply)
        try out.append(head)
        var rows = 0
        func emit(_ doc: DocumentInfo?, key: JSON) throws {
            if rows > 0 { try out.append(",\r\n") }
            rows += 1
            guard let doc else {
                return try out.append(JSON.object(JSONObject([("key", key), ("error", "not_found")])).serialized())
            }
            try emitRow(doc, database, query, &out)
        }
        if let keys = query.keys {
            var ordered = keys
            if range.descending { ordered.reverse() }
            for key in ordered.dropFirst(query.skip).prefix(query.limit ?? Int.max) {
                try emit(try key.stringValue.flatMap { try database.document($0) }, key: key)
            }
        } else {
            var remaining = query.limit ?? Int.max
            var skip = query.skip
            var after: String?
            while remaining > 0 {
                var page: [DocumentInfo] = []
                try database.allDocs(
                    startKey: after ?? range.startKey, inclusiveStart: after == nil, endKey: range.endKey,
                    inclusiveEnd: range.inclusiveEnd, descending: range.descending, skip: skip,
                    limit: min(remaining, App.allDocsPageSize)
                ) { doc in
                    page.append(doc)
                    return true
                }
                skip = 0
                for doc in page { try emit(doc, key: .string(doc.id)) }
                remaining -= page.count
                guard let last = page.last, page.count == App.allDocsPageSize else { break }
                after = last.id
            }
        }
        try out.append("\r\n]}\n")  // the newline CouchDB ends every JSON response with
        try out.send()
        try reply.finish()
    }

    /// One `{"id","key","value":{"rev","deleted"?},"doc"?}` row.
    private func emitRow(_ doc: DocumentInfo, _ database: Database, _ query: AllDocsQuery, _ out: inout FeedWriter)
        throws
    {
        var value = JSONObject()
        value["rev"] = .string(doc.winner.description)
        if doc.deleted { value["deleted"] = true }
        var row = JSONObject()
        row["id"] = .string(doc.id)
        row["key"] = .string(doc.id)
        row["value"] = .object(value)
        guard query.includeDocs else { return try out.appendRow(row, doc: nil, app: self, database: database) }
        guard !doc.deleted, let revision = try database.revision(doc.id, rev: nil) else {
            row["doc"] = .null
            return try out.appendRow(row, doc: nil, app: self, database: database)
        }
        let rendered = try feedDocument(revision, id: doc.id, info: doc, options: query.render)
        try out.appendRow(row, doc: rendered, app: self, database: database)
    }
}
