import CouchWire

/// The lenient query options of document reads and writes.
extension QueryParameters {
    /// Whether any value given for a document option `name` is exactly `true` (`chttpd_db:parse_doc_query`
    /// matches `{"revs", "true"}` and ignores every other pair).
    func isExactlyTrue(_ name: String) -> Bool {
        pairs.contains { $0.name == name && $0.value == "true" }
    }

    /// `new_edits` of a document write: the last `true` or `false` given wins; other values are ignored.
    var newEdits: Bool {
        pairs.last { $0.name == "new_edits" && ($0.value == "true" || $0.value == "false") }?.value != "false"
    }
}

extension Request {
    /// `batch=ok` on a document write.
    var isBatch: Bool { query["batch"] == "ok" }

    /// The JSON body of a document `PUT`. CouchDB reads it as JSON whatever the `Content-Type` says (curl's
    /// default `application/x-www-form-urlencoded` included); a body under another type that is not JSON is
    /// 415 `bad_content_type`, which tells a client that tried an unsupported encoding (Couchbase Lite falls
    /// back from multipart to JSON only on a 415) what went wrong, where a 400 would blame the bytes.
    func documentJSONBody() throws(CouchError) -> JSON {
        let declaredJSON = contentType.map { $0 == "application/json" || $0 == "text/plain" } ?? true
        do throws(CouchError) {
            return try jsonBody(limit: Limits.documentBytes)
        } catch {
            guard error == .invalidJSON, !declaredJSON else { throw error }
            throw .badContentType(
                "Content-Type must be multipart/related or application/json, not \(contentType ?? "")")
        }
    }
}
