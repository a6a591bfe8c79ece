import CouchWire

/// `POST …/queries` of `_all_docs`, `_design_docs` and a view (CouchDB 2.2's multi-query): a body
/// `{"queries":[{…}, …]}` whose objects are queries' parameters in their JSON forms, answered as
/// `{"results":[…]}` with one result per query, each framed as that query alone would be answered. Results stream
/// one after the other, so memory stays that of one query whatever their number.
enum MultiQuery {
    /// The query objects of the request's body.
    /// - Throws: CouchDB's 400s for a body without `queries` or with a `queries` that is not an array, and for a
    ///   query that is not an object (CouchDB crashes with a 500 `function_clause` on one).
    static func queries(_ request: Request) throws -> [JSONObject] {
        try request.requireJSONContent()
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        guard let member = body["queries"] else {
            throw CouchError.badRequest("POST body must include `queries` parameter.")
        }
        guard let queries = member.arrayValue else { throw CouchError.badRequest("`queries` member must be an array.") }
        return try queries.map { query in
            guard let object = query.objectValue else { throw CouchError.badRequest("Each query must be an object.") }
            return object
        }
    }

    /// Answers a multi-query without queries: `{"results":[]}`.
    static func noResults() -> Response {
        .bytes(.ok, Array("{\"results\":[\r\n]}\n".utf8))
    }
}

/// Where one listing goes in a multi-query's `{"results":[…]}`: its place, and how many there are.
struct ResultPart {
    let index: Int
    let count: Int
}

extension FeedWriter {
    /// Begins a listing: the response of a single query, or one result of a multi-query (the first also opens
    /// its `{"results":[`, the others follow a separator).
    mutating func beginListing(_ part: ResultPart?) throws {
        guard let part else { return }
        try append(part.index == 0 ? "{\"results\":[\r\n" : ",\r\n")
    }

    /// Ends a listing's rows (`\r\n]}`), and the response after a single query or a multi-query's last result.
    mutating func endListing(_ part: ResultPart?) throws {
        try append("\r\n]}")
        if let part {
            guard part.index == part.count - 1 else { return try send() }
            try append("\r\n]}")
        }
        try append("\n")  // the newline CouchDB ends every JSON response with
        try send()
    }
}
