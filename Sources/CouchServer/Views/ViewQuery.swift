import CouchQuery
import CouchStore
import CouchWire

/// The parameters of one `_view` request, read as `couch_mrview_http:parse_params` and
/// `couch_mrview_util:validate_args` read them: query string over POST body, later names over earlier ones,
/// booleans `true`/`false` in any case, CouchDB's `query_parse_error` for each bad value or combination.
struct ViewQuery {
    enum Update { case yes, no, lazy }
    enum GroupLevel: Equatable {
        case none
        case exact
        case level(Int)
    }

    var keys: [JSON]?
    var startKey: JSON?
    var endKey: JSON?
    var startDocID: String?
    var endDocID: String?
    var inclusiveEnd = true
    var descending = false
    var limit: Int?
    var skip = 0
    var group: Bool?
    var groupLevelParam: Int?
    var reduce: Bool?
    var includeDocs = false
    var conflicts: Bool?
    var render = RenderOptions()
    var update = Update.yes
    var updateSeq = false
    var sorted = true

    init(_ request: Request) throws {
        try self.init(request, body: request.postedQueryBody())
    }

    /// The parameters of `request`, whose POST body was already read as `body`.
    init(_ request: Request, body: JSONObject?) throws {
        if let body {
            for (name, value) in body { try apply(name, decoded: value) }
            // `treat_single_keys_as_key`: one key in the body is a `keys` query all the same.
        }
        for (name, value) in request.query.pairs { try apply(name, text: value) }
    }

    private mutating func apply(_ name: String, decoded value: JSON) throws {
        switch name {
        case "keys":
            guard case .array(let array) = value else {
                throw CouchError.queryParseError("`keys` must be an array of strings.")
            }
            if array.count == 1 {
                startKey = array[0]
                endKey = array[0]
            } else {
                keys = array
            }
        case "key":
            startKey = value
            endKey = value
        case "startkey", "start_key": startKey = value
        case "endkey", "end_key": endKey = value
        default:
            // Other body members are the query parameters' JSON forms.
            try apply(name, text: QueryParameters.text(ofDecoded: value))
        }
    }

    private mutating func apply(_ name: String, text value: String) throws {
        func json() throws(CouchError) -> JSON {
            do {
                return try JSON.parse(value)
            } catch {
                throw .badRequest("invalid UTF-8 JSON")
            }
        }
        switch name {
        case "reduce": reduce = try QueryParameters.viewBool(value)
        case "key":
            let key = try json()
            startKey = key
            endKey = key
        case "keys":
            guard case .array(let array) = try json() else {
                throw CouchError.queryParseError("`keys` must be an array of strings.")
            }
            if array.count == 1 {
                startKey = array[0]
                endKey = array[0]
            } else {
                keys = array
            }
        case "startkey", "start_key": startKey = try json()
        case "endkey", "end_key": endKey = try json()
        case "startkey_docid", "start_key_doc_id": startDocID = value
        case "endkey_docid", "end_key_doc_id": endDocID = value
        case "limit": limit = try ViewQuery.positive(value)
        case "skip": skip = try ViewQuery.positive(value)
        case "stale":
            switch value {
            case "ok": update = .no
            case "update_after": update = .lazy
            default: throw CouchError.queryParseError("Invalid value for `stale`.")
            }
        case "stable":
            guard value == "true" || value == "false" else {
                throw CouchError.queryParseError("Invalid value for `stable`.")
            }
        case "update":
            switch value {
            case "true": update = .yes
            case "false": update = .no
            case "lazy": update = .lazy
            default: throw CouchError.queryParseError("Invalid value for `update`.")
            }
        case "descending": descending = try QueryParameters.viewBool(value)
        case "group": group = try QueryParameters.viewBool(value)
        case "group_level": groupLevelParam = try ViewQuery.positive(value)
        case "inclusive_end": inclusiveEnd = try QueryParameters.viewBool(value)
        case "include_docs": includeDocs = try QueryParameters.viewBool(value)
        case "attachments": render.attachments = try QueryParameters.viewBool(value)
        case "att_encoding_info": render.attEncodingInfo = try QueryParameters.viewBool(value)
        case "update_seq": updateSeq = try QueryParameters.viewBool(value)
        case "conflicts": conflicts = try QueryParameters.viewBool(value)
        case "sorted": sorted = try QueryParameters.viewBool(value)
        default: break
        }
    }

    /// `parse_pos_int`.
    private static func positive(_ value: String) throws(CouchError) -> Int {
        guard let n = Int(value) else { throw .queryParseError("Invalid value for integer: \"\(value)\"") }
        guard n >= 0 else { throw .queryParseError("Invalid value for positive integer: \"\(value)\"") }
        return n
    }

    /// `determine_group_level`.
    func groupLevel() throws(CouchError) -> GroupLevel {
        switch (group, groupLevelParam) {
        case (false, let level?) where level > 0:
            throw .queryParseError("Can't specify group=false and group_level>0 at the same time")
        case (_, let level?): return level == 0 ? .none : .level(level)
        case (true, nil): return .exact
        default: return .none
        }
    }

    /// `validate_args` and `check_range` for a view; returns whether the query reduces.
    package func validate(isReduceView: Bool) throws(CouchError) -> Bool {
        let level = try groupLevel()
        if !isReduceView, reduce == true { throw .queryParseError("Reduce is invalid for map-only views.") }
        let reduces = isReduceView && reduce != false
        if reduces, keys != nil, level != .exact {
            throw .queryParseError("Multi-key fetches for reduce views must use `group=true`")
        }
        if let keys, !keys.isEmpty, startKey != nil || endKey != nil {
            let single: JSON? = keys.count == 1 ? keys[0] : nil
            guard let single, startKey == single, endKey == single else {
                throw .queryParseError("`keys` is incompatible with `key`, `start_key` and `end_key`")
            }
        }
        if level != .none, !reduces {
            throw .queryParseError("Invalid use of grouping on a map view.")
        }
        if reduces, includeDocs { throw .queryParseError("`include_docs` is invalid for reduce") }
        if reduces, conflicts != nil { throw .queryParseError("`conflicts` is invalid for reduce views.") }
        if let startKey, let endKey, startKey != endKey {
            var order = ViewCollation.compare(startKey, endKey)
            if order == 0 {
                let low = startDocID ?? (descending ? "\u{10FFFF}" : "")
                let high = endDocID ?? (descending ? "" : "\u{10FFFF}")
                order = low.utf8.lexicographicallyPrecedes(high.utf8) ? -1 : 1
            }
            if !descending, order >= 0 {
                throw .queryParseError(
                    "No rows can match your key range, reverse your start_key and end_key or set descending=true")
            }
            if descending, order < 0 {
                throw .queryParseError(
                    "No rows can match your key range, reverse your start_key and end_key or set descending=false")
            }
        }
        return reduces
    }

    /// The rows a range query reads (no `keys`), or the rows of one key of `keys`.
    package func scan(view: Int, key: JSON? = nil) -> ViewScan {
        let start = key ?? startKey
        let end = key ?? endKey
        // The start is inclusive, from `startkey_docid` on; the end stops at `endkey_docid`, and `inclusive_end=false`
        // leaves out the end key's rows (from `endkey_docid` on, when given).
        let startBound = start.map {
            ViewBound(sortKey: ViewCollation.sortKey($0), docID: startDocID, inclusive: true)
        }
        let endBound = end.map {
            ViewBound(sortKey: ViewCollation.sortKey($0), docID: endDocID, inclusive: inclusiveEnd)
        }
        return descending
            ? ViewScan(view: view, low: endBound, high: startBound, descending: true)
            : ViewScan(view: view, low: startBound, high: endBound, descending: false)
    }
}
