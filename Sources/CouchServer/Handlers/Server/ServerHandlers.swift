import CouchCrypto
import CouchStore
import CouchWire

/// Server-level endpoints: `/`, `/_up`, `/_all_dbs`, `/_uuids` (`/_session` is with the users and sessions).
package struct ServerHandlers: Sendable {
    /// Lists the databases (`_all_dbs`).
    package let store: Store
    /// The server's id, in the welcome.
    package let serverUUID: String
    /// What `_db_updates` follows.
    let databaseUpdates: DatabaseUpdates

    /// `GET /`: the welcome a CouchDB client reads the version from (a browser is shown the gallery's page instead,
    /// in the route table).
    package func root(_ c: RequestContext) throws -> Response {
        return .json(.ok, Self.welcome(serverUUID: serverUUID))
    }

    /// The body of `GET /`, which `_node/{node}` also answers when it names the node outright.
    package static func welcome(serverUUID: String) -> JSON {
        [
            "couchdb": "Welcome",
            "version": .string(App.couchDBVersion),
            "uuid": .string(serverUUID),
            "features": ["replication", "attachments"],
            "vendor": ["name": "couchlite", "version": .string(App.version)],
        ]
    }

    /// `GET /_db_updates`.
    func databaseUpdatesFeed(_ c: RequestContext) throws -> Response {
        DatabaseUpdatesFeed.response(c.request, updates: databaseUpdates)
    }

    /// `GET /_up`.
    func up(_ c: RequestContext) throws -> Response {
        return .json(.ok, ["status": "ok"])
    }

    /// `GET /_all_dbs`, with the `startkey`/`endkey` family, `skip` and `limit`.
    func allDatabases(_ c: RequestContext) throws -> Response {
        return try .json(.ok, .array(ServerHandlers.databaseNames(store, c.query).map { .string($0) }))
    }

    /// The database names `_all_dbs` (and `_dbs_info`) list for `query`'s range, `skip` and `limit`.
    static func databaseNames(_ store: Store, _ query: QueryParameters) throws -> [String] {
        let range = try KeyRange(query)
        var names = store.databaseNames().filter { range.contains($0) }
        if range.descending { names.reverse() }
        let skip = try query.int("skip") ?? 0
        let limit = try query.int("limit")
        return Array(names.dropFirst(skip).prefix(limit ?? Int.max))
    }

    /// `GET /_uuids?count=N`: random 128-bit ids as 32 lowercase hex digits.
    func uuids(_ c: RequestContext) throws -> Response {
        let count = try c.query.int("count") ?? 1
        guard count <= min(Limits.maxUUIDCount, Limits.uuidCountCeiling) else {
            throw CouchError.badRequest("count parameter too large")
        }
        let uuids = (0..<count).map { _ in JSON.string(Secrets.randomBytes(16).hexString) }
        var headers = HTTPHeaders()
        headers.set("Cache-Control", "must-revalidate, no-cache")
        headers.set("Pragma", "no-cache")
        return .json(.ok, ["uuids": .array(uuids)], headers: headers)
    }
}

extension ServerHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/", .anyone, drop: .open, root),
            Route(read, "/_up", .anyone, up),
            Route(read, "/_all_dbs", .serverAdmin, allDatabases),
            Route(read, "/_uuids", .anyone, notAllowedReason: "GET", uuids),
            Route(read, "/_db_updates", .serverAdmin, notAllowedReason: "GET", databaseUpdatesFeed),
        ]
    }
}
