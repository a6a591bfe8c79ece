import CouchStore
import CouchWire

/// `GET/POST /_dbs_info`: `GET /db` for many databases in one request (server admins only, as `_all_dbs`).
extension DatabaseHandlers {
    /// CouchDB's `[chttpd] max_db_number_for_dbs_info_req`: the most `keys` one POST may name.
    static var maxDatabasesPerInfoRequest: Int { Limits.live.maxDatabasesPerInfoRequest.value }

    /// `GET /_dbs_info` takes `_all_dbs`' parameters; each row is `{"key": name, "info": {…}}`, streamed one
    /// database at a time. A database deleted while the list is written is left out, as CouchDB does.
    func databasesInfo(_ c: RequestContext) throws -> Response {
        streamInfos(try ServerHandlers.databaseNames(store, c.query).map { .string($0) }) { _ in nil }
    }

    /// `POST /_dbs_info` `{"keys": [name, …]}`: a row per key, in order, `{"key","error":"not_found"}` for a
    /// name that is no database (or no string).
    func databasesInfoForKeys(_ c: RequestContext) throws -> Response {
        try c.request.requireJSONContent()
        let body = try c.request.jsonObjectBody(limit: Limits.smallRequestBytes)
        guard let member = body["keys"] else { throw CouchError.badRequest("`keys` member must exist.") }
        guard let keys = member.arrayValue else { throw CouchError.badRequest("`keys` member must be an array.") }
        guard keys.count <= DatabaseHandlers.maxDatabasesPerInfoRequest else {
            throw CouchError.badRequest("too_many_keys")
        }
        return streamInfos(keys) { key in
            JSON.object(JSONObject([("key", key), ("error", "not_found")]))
        }
    }

    /// Writes `[row, …]`, reading one database's info per row; `missing` makes the row of a key that names no
    /// database (nil leaves it out).
    private func streamInfos(_ keys: [JSON], missing: @escaping (JSON) -> JSON?) -> Response {
        .stream(.ok) { stream in try writeInfos(keys, missing: missing, into: FeedWriter(stream)) }
    }

    private func writeInfos(_ keys: [JSON], missing: (JSON) -> JSON?, into writer: FeedWriter) throws {
        var out = writer
        try out.append("[")
        var first = true
        for key in keys {
            let info = try key.stringValue.flatMap { name -> JSON? in
                guard let database = try? store.open(name) else { return nil }
                do {
                    return try DatabaseInfo.json(of: database, compactions: compactions)
                } catch let error as StoreError where error == .dbNotFound {
                    return nil
                }
            }
            guard let row = info.map({ JSON.object(JSONObject([("key", key), ("info", $0)])) }) ?? missing(key)
            else { continue }
            try out.append(first ? row.serialized() : [UInt8(ascii: ",")] + row.serialized())
            first = false
        }
        try out.append("]\n")
        try out.send()
    }
}
