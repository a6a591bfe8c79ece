import CouchWire
import RevTree

/// `GET/POST /db/_all_docs`, streamed: rows are read a page at a time and each is sent as it is rendered, so
/// memory stays flat whatever the database's size. The framing is CouchDB's
/// (`{"total_rows":…,"offset":…,"rows":[\r\n` … `,\r\n` … `\r\n]}`).
struct AllDocsHandlers: Sendable {
    /// Streams the inline attachments of `include_docs&attachments=true`.
    let blobs: BlobRegistry

    /// Documents read per store call. Rendering (`include_docs`) reads again, so a page is collected first: a
    /// thread holding a reader must not ask the bounded pool for a second one.
    static let pageSize = 500

    /// `GET/POST /db/_all_docs`.
    func list(_ c: RequestContext) throws {
        try list(c, designOnly: false)
    }

    /// `GET/POST /db/_design_docs`: `_all_docs` over the design documents alone, as CouchDB's `_design`
    /// namespace: the key range is narrowed to `_design/…`, `keys` outside it are left out (not `not_found`), and
    /// `total_rows` counts the live design documents.
    func designDocuments(_ c: RequestContext) throws {
        try list(c, designOnly: true)
    }

    private func list(_ c: RequestContext, designOnly: Bool) throws {
        let database = try c.database()
        let reply = c.reply
        var query = try AllDocsQuery(c.request)
        let info = try database.info()
        var range = query.range
        var total = info.docCount
        if designOnly {
            let bounds = KeyRange.designDocuments
            range = range.narrowed(to: bounds)
            query.keys = query.keys?.filter { $0.stringValue?.hasPrefix(bounds.lower) == true }
            total =
                try database.liveDocumentCount(before: bounds.upper, descending: false)
                - database.liveDocumentCount(before: bounds.lower, descending: false)
        }
        var offset: JSON = .null
        if query.keys == nil {
            if range.descending, range.startKey == nil, range.endKey == nil {
                range = KeyRange(descending: true)
            }
            let before =
                try range.startKey.map { try database.liveDocumentCount(before: $0, descending: range.descending) } ?? 0
            offset = .number(JSONNumber(min(before + query.skip, total)))
        }
        var head: [UInt8] = Array("{\"total_rows\":\(total),\"offset\":".utf8)
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
                    limit: min(remaining, AllDocsHandlers.pageSize)
                ) { doc in
                    page.append(doc)
                    return true
                }
                skip = 0
                for doc in page { try emit(doc, key: .string(doc.id)) }
                remaining -= page.count
                guard let last = page.last, page.count == AllDocsHandlers.pageSize else { break }
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
        guard query.includeDocs else { return try out.appendRow(row, doc: nil, database: database, blobs: blobs) }
        guard !doc.deleted, let revision = try database.revision(doc.id, rev: nil) else {
            row["doc"] = .null
            return try out.appendRow(row, doc: nil, database: database, blobs: blobs)
        }
        let rendered = try FeedWriter.document(revision, id: doc.id, info: doc, options: query.render)
        try out.appendRow(row, doc: rendered, database: database, blobs: blobs)
    }
}
