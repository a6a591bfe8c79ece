import CouchCrypto
import CouchWire
import RevTree

extension ChangesHandlers {
    /// The `req` object a filter function gets, built as CouchDB's `chttpd_external:json_req_obj` builds it:
    /// `info` (the database's info), `uuid`, `id`, `method`, `requested_path` (the raw target split at `/`,
    /// query included, as CouchDB splits it), `path`, `raw_path`, `query`, `headers`, `body` (`"undefined"`
    /// without one), `peer`, `form`, `cookie`, `userCtx` and `secObj`.
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
        var headers = JSONObject()
        for (name, value) in request.head.headers where name.lowercased() != "authorization" {
            headers[name] = .string(value)
        }
        req["headers"] = .object(headers)
        req["body"] = body.map { .string(JSON.object($0).serializedString) } ?? "undefined"
        req["peer"] = request.head.remoteAddress.map { .string($0) } ?? .null
        req["form"] = .object(JSONObject())
        var cookies = JSONObject()
        for header in request.head.headers.values("Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard let name = parts.first.map({ String($0).trimmingSpaces() }), !name.isEmpty else { continue }
                cookies[name] = .string(parts.count > 1 ? String(parts[1]) : "")
            }
        }
        req["cookie"] = .object(cookies)
        req["userCtx"] = request.user.designJSON(database: database.name)
        req["secObj"] = .object(security.security(of: database.name).json)
        return .object(req)
    }
}
