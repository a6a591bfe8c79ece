import CouchStore
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
    func list(_ c: RequestContext) throws -> Response {
        try list(c, designOnly: false)
    }

    /// `GET/POST /db/_design_docs`: `_all_docs` over the design documents alone, as CouchDB's `_design`
    /// namespace: the key range is narrowed to `_design/…`, `keys` outside it are left out (not `not_found`), and
    /// `total_rows` counts the live design documents.
    func designDocuments(_ c: RequestContext) throws -> Response {
        try list(c, designOnly: true)
    }

    /// `/db/_design/d/_list/l/_all_docs`: the same rows, each handed whole to a list function (`sink`), documents
    /// with attachment stubs as a view's rows give them. `body` is a POST's parsed body (the list read it first).
    func list(_ c: RequestContext, body: JSONObject?, into sink: inout some ViewRowSink) throws {
        var rows = AllDocsListRows(sink: sink)
        defer { sink = rows.sink }
        do {
            try list(c.database(), AllDocsQuery(c.request, body: body), designOnly: false, into: &rows)
        } catch is ViewRowsStop {
            try rows.sink.finish()
        }
    }

    /// `POST /db/_all_docs/queries`, `/db/_design_docs/queries` (`MultiQuery`): every query is read before the
    /// first is answered, so a bad one is a clean 400.
    func queries(_ c: RequestContext, designOnly: Bool) throws -> Response {
        let database = try c.database()
        let queries = try MultiQuery.queries(c.request).map { try AllDocsQuery(c.request, query: $0) }
        guard !queries.isEmpty else { return MultiQuery.noResults() }
        return .stream(.ok) { stream in
            for (index, query) in queries.enumerated() {
                var response = AllDocsResponse(
                    writer: FeedWriter(stream), blobs: blobs, part: ResultPart(index: index, count: queries.count))
                try list(database, query, designOnly: designOnly, into: &response)
            }
        }
    }

    private func list(_ c: RequestContext, designOnly: Bool) throws -> Response {
        let (database, query) = (try c.database(), try AllDocsQuery(c.request))
        return .stream(.ok) { stream in
            var response = AllDocsResponse(writer: FeedWriter(stream), blobs: blobs)
            try list(database, query, designOnly: designOnly, into: &response)
        }
    }

    private func list(
        _ database: Database, _ query: AllDocsQuery, designOnly: Bool, into out: inout some AllDocsRowSink
    ) throws {
        var query = query
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
            // Like `offset`, null for a `keys` query (fabric's all_docs sends no sequence for one).
            head += Array(",\"update_seq\":".utf8)
            (query.keys == nil ? Seq.json(info.updateSeq) : .null).serialize(into: &head)
        }
        head += Array(",\"rows\":[\r\n".utf8)
        try out.start(head)
        if let keys = query.keys {
            var ordered = keys
            if range.descending { ordered.reverse() }
            for key in ordered.dropFirst(query.skip).prefix(query.limit ?? Int.max) {
                if let doc = try key.stringValue.flatMap({ try database.document($0) }) {
                    try out.found(doc, database, query)
                } else {
                    try out.missing(key)
                }
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
                for doc in page { try out.found(doc, database, query) }
                remaining -= page.count
                guard let last = page.last, page.count == AllDocsHandlers.pageSize else { break }
                after = last.id
            }
        }
        try out.finish()
    }
}

/// Where an `_all_docs` listing sends its head and rows: the JSON response, or a list function.
protocol AllDocsRowSink {
    mutating func start(_ head: [UInt8]) throws
    /// The row of a document (deleted ones too, when a `keys` query names them).
    mutating func found(_ doc: DocumentInfo, _ database: Database, _ query: AllDocsQuery) throws
    /// The row of a `keys` entry that names no document.
    mutating func missing(_ key: JSON) throws
    mutating func finish() throws
}

extension AllDocsRowSink {
    /// `{"id","key","value":{"rev","deleted"?}}`, CouchDB's member order.
    static func row(_ doc: DocumentInfo) -> JSONObject {
        var value = JSONObject()
        value["rev"] = .string(doc.winner.description)
        if doc.deleted { value["deleted"] = true }
        var row = JSONObject()
        row["id"] = .string(doc.id)
        row["key"] = .string(doc.id)
        row["value"] = .object(value)
        return row
    }

    /// The document of an `include_docs` row: nil (`null`) when it is deleted.
    static func revision(_ doc: DocumentInfo, _ database: Database) throws -> StoredRevision? {
        guard !doc.deleted else { return nil }
        return try database.revision(doc.id, rev: nil)
    }
}

/// The `_all_docs` JSON response, streamed. The framing is CouchDB's (`{"total_rows":…,"offset":…,"rows":[\r\n`
/// … `,\r\n` … `\r\n]}`); inline attachments (`attachments=true`) stream from their blobs.
private struct AllDocsResponse: AllDocsRowSink {
    var writer: FeedWriter
    let blobs: BlobRegistry
    /// Its place in a multi-query's results, if it is one.
    let part: ResultPart?
    private var rows = 0

    init(writer: FeedWriter, blobs: BlobRegistry, part: ResultPart? = nil) {
        self.writer = writer
        self.blobs = blobs
        self.part = part
    }

    mutating func start(_ head: [UInt8]) throws {
        try writer.beginListing(part)
        try writer.append(head)
    }

    mutating func found(_ doc: DocumentInfo, _ database: Database, _ query: AllDocsQuery) throws {
        try separate()
        var row = Self.row(doc)
        guard query.includeDocs else { return try writer.appendRow(row, doc: nil, database: database, blobs: blobs) }
        guard let revision = try Self.revision(doc, database) else {
            row["doc"] = .null
            return try writer.appendRow(row, doc: nil, database: database, blobs: blobs)
        }
        let rendered = try FeedWriter.document(revision, id: doc.id, info: doc, options: query.render)
        try writer.appendRow(row, doc: rendered, database: database, blobs: blobs)
    }

    mutating func missing(_ key: JSON) throws {
        try separate()
        try writer.append(JSON.object(JSONObject([("key", key), ("error", "not_found")])).serialized())
    }

    mutating func finish() throws { try writer.endListing(part) }

    private mutating func separate() throws {
        if rows > 0 { try writer.append(",\r\n") }
        rows += 1
    }
}

/// `_all_docs` rows for a list function, each whole (`couch_mrview_show:send_list_row`): a missing key's row is
/// `{"id":"error","key":…,"value":"not_found"}`, as fabric hands it to the list; documents carry attachment stubs.
private struct AllDocsListRows<Sink: ViewRowSink>: AllDocsRowSink {
    var sink: Sink

    mutating func start(_ head: [UInt8]) throws { try sink.start(head) }

    mutating func found(_ doc: DocumentInfo, _ database: Database, _ query: AllDocsQuery) throws {
        var row = Self.row(doc)
        if query.includeDocs {
            var options = query.render
            options.attachments = false
            row["doc"] =
                try Self.revision(doc, database).map { revision in
                    .object(try DocumentRenderer(id: doc.id, info: doc, options: options, inline: nil).render(revision))
                } ?? .null
        }
        try sink.row(JSON.object(row).serialized())
    }

    mutating func missing(_ key: JSON) throws {
        try sink.row(JSON.object(JSONObject([("id", "error"), ("key", key), ("value", "not_found")])).serialized())
    }

    mutating func finish() throws { try sink.finish() }
}

extension AllDocsHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read + [.POST], "/{db}/_all_docs", .memberListing, body: .bulk, list),
            Route(read + [.POST], "/{db}/_design_docs", .member, body: .bulk, designDocuments),
            Route([.POST], "/{db}/_all_docs/queries", .memberListing, body: .bulk, notAllowedReason: "POST") { c in
                try queries(c, designOnly: false)
            },
            Route([.POST], "/{db}/_design_docs/queries", .member, body: .bulk, notAllowedReason: "POST") { c in
                try queries(c, designOnly: true)
            },
        ]
    }
}
