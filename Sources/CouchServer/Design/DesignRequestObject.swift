import CouchCrypto
import CouchStore
import CouchWire

/// The `req` object design functions get (filters, shows, lists, updates), built as CouchDB's
/// `chttpd_external:json_req_obj` builds it: `info` (the database's info), `uuid`, `id`, `method` (HEAD is GET),
/// `requested_path` (the raw target split at `/`, query included, each part decoded, as CouchDB splits it),
/// `path`, `raw_path`, `query` (`key`, `startkey`, `endkey` and `descending` decoded as JSON), `headers`
/// (`DesignRequestHeaders`), `body` (`"undefined"` without one), `peer`, `form` (a POST or PUT of
/// `application/x-www-form-urlencoded`), `cookie` (always `{}`), `userCtx` and `secObj` — of the request's own
/// database only: a design function is never handed another database.
struct DesignRequestObject {
    /// What `req.body` holds.
    enum Body {
        /// No body at all: the string `"undefined"` (mochiweb's answer for a request without one).
        case none
        /// The request's bytes, as a string.
        case raw([UInt8])
        /// A POSTed list's body as CouchDB parsed it before the list ran (`req_body = {Props}`): the object.
        case parsed(JSONObject)
    }

    let security: SecurityStore
    let compactions: Compactions

    /// Request headers never shown to a design function (lower case): CouchDB 3.4 (`scrub_json_request = true`)
    /// hands design functions no credentials.
    static let credentialHeaders: Set<String> = ["authorization", "cookie", "x-auth-couchdb-token"]

    /// Query parameters CouchDB decodes as JSON (`chttpd_external:json_query_keys`).
    private static let jsonQueryKeys: Set<String> = ["key", "startkey", "endkey", "descending"]

    func json(_ database: Database, _ request: Request, id: String?, body: Body) throws -> JSON {
        var req = JSONObject()
        req["info"] = try DatabaseInfo.json(of: database, compactions: compactions)
        req["uuid"] = .string(Secrets.randomBytes(16).hexString)
        req["id"] = id.map { .string($0) } ?? .null
        // chttpd aliases HEAD to GET before anything sees the method (mochiweb drops the body).
        req["method"] = .string(request.verb == .HEAD ? "GET" : request.method)
        req["requested_path"] = .array(Self.requestedPath(Self.requestedTarget(request.head)).map { .string($0) })
        req["path"] = .array(request.segments.map { .string($0) })
        req["raw_path"] = .string(request.head.target)
        var query = JSONObject()
        for (name, value) in request.query.pairs {
            let decoded = DesignRequestObject.jsonQueryKeys.contains(name) ? try? JSON.parse(Array(value.utf8)) : nil
            query[name] = decoded ?? .string(value)
        }
        req["query"] = .object(query)
        req["headers"] = .object(
            DesignRequestHeaders.json(request.head.headers, excluding: DesignRequestObject.credentialHeaders))
        switch body {
        case .none: req["body"] = "undefined"
        case .raw(let bytes): req["body"] = .string(String(decoding: bytes, as: UTF8.self))
        case .parsed(let object): req["body"] = .object(object)
        }
        req["peer"] = request.head.remoteAddress.map { .string($0) } ?? .null
        req["form"] = .object(try DesignRequestObject.form(request, body))
        req["cookie"] = .object(JSONObject())
        req["userCtx"] = request.user.designJSON(database: database.name)
        req["secObj"] = .object(security.security(of: database.name).json)
        return .object(req)
    }

    /// The path the client says it asked for, as chttpd takes it: `X-CouchDB-Vhost-Path`, else
    /// `X-CouchDB-Requested-Path` (headers a rewriting proxy sets; only the function reads them), else the target.
    static func requestedTarget(_ head: HTTPRequestHead) -> String {
        head.headers["X-CouchDB-Vhost-Path"] ?? head.headers["X-CouchDB-Requested-Path"] ?? head.target
    }

    /// `requested_path_parts`: the raw target, query string and all, split at `/` and each part percent-decoded
    /// with `+` as a space (`mochiweb_util:unquote`); a part that does not decode to UTF-8 stays as sent.
    static func requestedPath(_ target: String) -> [String] {
        target.split(separator: "/", omittingEmptySubsequences: true).map { part in
            PercentEncoding.decode(part, plusIsSpace: true) ?? String(part)
        }
    }

    /// The fields of a form body (`mochiweb_util:parse_qs`), only for POST and PUT, as CouchDB.
    private static func form(_ request: Request, _ body: Body) throws -> JSONObject {
        var form = JSONObject()
        guard case .raw(let body) = body, request.verb == .POST || request.verb == .PUT,
            request.contentType == "application/x-www-form-urlencoded"
        else { return form }
        let text = String(decoding: body, as: UTF8.self).split(separator: "+", omittingEmptySubsequences: false)
            .joined(separator: "%20")
        for (name, value) in try QueryParameters(raw: text).pairs { form[name] = .string(value) }
        return form
    }
}
