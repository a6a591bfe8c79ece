import CouchCrypto
import CouchWire
import RevTree

extension ChangesHandlers {
    /// The `req` object a filter function gets, built as CouchDB's `chttpd_external:json_req_obj` builds it:
    /// `info` (the database's info), `uuid`, `id`, `method`, `requested_path` (the raw target split at `/`,
    /// query included, as CouchDB splits it), `path`, `raw_path`, `query`, `headers`, `body` (`"undefined"`
    /// without one), `peer`, `form`, `cookie` (always `{}`), `userCtx` and `secObj`.
    func filterRequest(_ database: Database, _ request: Request, body: JSONObject?) throws -> JSON {
        var req = JSONObject()
        req["info"] = try DatabaseInfo.json(of: database, compactions: compactions)
        req["uuid"] = .string(Secrets.randomBytes(16).hexString)
        req["id"] = .null
        req["method"] = .string(request.method)
        req["requested_path"] = .array(
            request.head.target.split(separator: "/", omittingEmptySubsequences: true).map { .string(String($0)) })
        req["path"] = .array(request.segments.map { .string($0) })
        req["raw_path"] = .string(request.head.target)
        var query = JSONObject()
        for (name, value) in request.query.pairs { query[name] = .string(value) }
        req["query"] = .object(query)
        // CouchDB 3.4 (`chttpd_util:scrub_mochiweb_client_req`, `scrub_json_request = true`) hands design
        // functions no credentials: no `Authorization`, `Cookie` or `X-Auth-CouchDB-Token` header, and `cookie` {}.
        var headers = JSONObject()
        for (name, value) in request.head.headers where !ChangesHandlers.credentialHeaders.contains(name.lowercased()) {
            headers[name] = .string(value)
        }
        req["headers"] = .object(headers)
        req["body"] = body.map { .string(JSON.object($0).serializedString) } ?? "undefined"
        req["peer"] = request.head.remoteAddress.map { .string($0) } ?? .null
        req["form"] = .object(JSONObject())
        req["cookie"] = .object(JSONObject())
        req["userCtx"] = request.user.designJSON(database: database.name)
        req["secObj"] = .object(security.security(of: database.name).json)
        return .object(req)
    }

    /// Request headers never shown to a design function (lower case).
    static let credentialHeaders: Set<String> = ["authorization", "cookie", "x-auth-couchdb-token"]
}
