/// Booleans as CouchDB's view parameters take them (`_all_docs`, `_all_dbs`: `couch_mrview_http:parse_boolean`).
extension QueryParameters {
    /// `true` or `false` in any case (`True`, `FALSE`: client libraries pass their language's booleans through);
    /// any other spelling (`yes`, `1`, empty) is 400 `query_parse_error`, with the value as Erlang's `~p` prints
    /// it (`"yes"`; the empty string is `[]`).
    func viewBool(_ name: String, default defaultValue: Bool = false) throws(CouchError) -> Bool {
        guard let value = self[name] else { return defaultValue }
        return try QueryParameters.viewBool(value)
    }

    static func viewBool(_ value: String) throws(CouchError) -> Bool {
        switch value.lowercased() {
        case "true": return true
        case "false": return false
        default: throw .queryParseError("Invalid boolean parameter: " + (value.isEmpty ? "[]" : "\"\(value)\""))
        }
    }
}
