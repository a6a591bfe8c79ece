import CouchStore
import CouchWire

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
        try self.init(request, body: request.postedQueryBody())
    }

    /// The parameters of `request`, whose POST body (`keys`) was already read as `body`.
    init(_ request: Request, body: JSONObject?) throws {
        try self.init(request.query, body: body)
    }

    /// One query of a multi-query: the object's members (their JSON forms, as a view's POST body takes them) over
    /// the request's own parameters.
    init(_ request: Request, query object: JSONObject) throws {
        var query = request.query
        for (name, value) in object where name != "keys" {
            // A key is JSON in a URL too (`startkey="a"`); the other parameters are their text.
            let isKey = ["key", "startkey", "start_key", "endkey", "end_key"].contains(name)
            query.append(name, isKey ? value.serializedString : QueryParameters.text(ofDecoded: value))
        }
        try self.init(query, body: object)
    }

    private init(_ query: QueryParameters, body: JSONObject?) throws {
        if let keysParam = try query.json("keys") {
            guard let array = keysParam.arrayValue else {
                throw CouchError.badRequest("`keys` parameter must be an array.")
            }
            keys = array
        }
        if let body {
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
