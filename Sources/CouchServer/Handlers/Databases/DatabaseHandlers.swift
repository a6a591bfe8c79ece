import CouchStore
import CouchWire
import Foundation

/// Database-level endpoints: create, info, delete, `_security`, and the small maintenance calls replicators make.
package struct DatabaseHandlers: Sendable {
    package let store: Store
    package let blobRegistry: BlobRegistry
    package let security: SecurityStore
    /// Dropped with their database.
    let views: ViewIndexes
    let compactions: Compactions
    let log: Logger
    /// CouchDB's `[couchdb] users_db_security_editable`, off by default.
    let usersDBSecurityEditable: Bool

    /// `GET /db`. The drop credentials get their own view of it (`DatabaseInfo.json(forDrop:)`): counts that
    /// moved with every id that existed would tell them which ids the owner has.
    package func info(_ c: RequestContext) throws -> Response {
        let database = try store.existing(c.databaseName())
        if let drop = c.user.drop { return .json(.ok, DatabaseInfo.json(forDrop: drop, name: database.name)) }
        return .json(.ok, try DatabaseInfo.json(of: database, compactions: compactions))
    }

    /// `PUT /db`. A created database starts from the default `_security`.
    package func create(_ c: RequestContext) throws -> Response {
        let name = try c.databaseName()
        try DatabaseHandlers.validateShardParameters(c.query)
        try DatabaseHandlers.validateDatabaseName(name)
        do {
            // Blobs a crashed earlier incarnation of this name left behind are not ours; they go
            // before the database is visible, so no request can store a blob that is then removed.
            _ = try store.create(name) { try? blobRegistry.destroy(name) }
        } catch {
            throw CouchError(error)
        }
        security.reset(name)
        var headers = HTTPHeaders()
        headers.set("Location", "/" + PercentEncoding.segment(name))
        return .json(.created, ["ok": true], headers: headers)
    }

    /// `DELETE /db`: its `_security` goes back to the default and its indexes go with it (a new database of the same
    /// name has another uuid anyway).
    func delete(_ c: RequestContext) throws -> Response {
        let name = try c.databaseName()
        do {
            try store.delete(name)
        } catch {
            throw CouchError(error)
        }
        try blobRegistry.destroy(name)
        security.reset(name)
        views.drop(name)
        return .json(.ok, ["ok": true])
    }

    /// `q` and `n` (shard count and replicas) mean nothing to a single-file database, so they are
    /// ignored, but a value CouchDB would refuse is refused as it does (chttpd_db:parse_shards_opt).
    static func validateShardParameters(_ query: QueryParameters) throws(CouchError) {
        for name in ["q", "n"] {
            if let value = query[name], (Int(value) ?? 0) <= 0 {
                throw .badRequest("The `\(name)` value should be a positive integer.")
            }
        }
    }

    /// CouchDB's rule: `^[a-z][a-z0-9_$()+/-]*$`, plus the system databases.
    package static func validateDatabaseName(_ name: String) throws(CouchError) {
        if App.isSystemDatabase(name) { return }
        let bytes = Array(name.utf8)
        guard let first = bytes.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z"),
            bytes.count <= Limits.databaseNameBytes
        else {
            throw .illegalDatabaseName(name)
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_$()+/-".utf8)
        guard bytes.allSatisfy({ allowed.contains($0) }) else { throw .illegalDatabaseName(name) }
    }

    // MARK: Maintenance

    /// `POST /db/_ensure_full_commit`: every acknowledged write is already durable.
    func ensureFullCommit(_ c: RequestContext) throws -> Response {
        return .json(.created, ["ok": true, "instance_start_time": "0"])
    }

    /// The one shard of every database: couchlite does not split them (CouchDB's mem3 ranges, q=1).
    static let shardRange = "00000000-ffffffff"

    /// `GET /db/_shards`: `{"shards":{range:[nodes]}}`, mem3's answer for a database of one shard on this node.
    func shards(_ c: RequestContext) throws -> Response {
        _ = try c.database()
        return .json(.ok, ["shards": [Self.shardRange: [.string(App.nodeName)]]])
    }

    /// `GET /db/_shards/{docid}`: the shard a document id belongs to (the one, whether the document exists or not).
    func shard(_ c: RequestContext) throws -> Response {
        _ = try c.database()
        return .json(.ok, ["range": .string(Self.shardRange), "nodes": [.string(App.nodeName)]])
    }

    /// `POST /db/_sync_shards` (server admins): nothing to synchronize between the copies of one shard; 202 as
    /// CouchDB answers once it has started its internal replications.
    func syncShards(_ c: RequestContext) throws -> Response {
        _ = try c.database()
        return .json(.accepted, ["ok": true])
    }

    /// `GET /db/_revs_limit`.
    func revsLimit(_ c: RequestContext) throws -> Response {
        return try .json(.ok, .number(JSONNumber(c.database().revsLimit)))
    }

    /// `PUT /db/_revs_limit`.
    func setRevsLimit(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        try database.setRevsLimit(DatabaseHandlers.positiveLimit(c, refusal: "`revs_limit` must be a positive integer"))
        return .json(.ok, ["ok": true])
    }

    /// The body of a `PUT` of a database's limit (`_revs_limit`, `_purged_infos_limit`): a positive integer,
    /// else 400 with `refusal`.
    static func positiveLimit(_ c: RequestContext, refusal: String) throws -> Int {
        guard let limit = try c.request.jsonBody(limit: Limits.smallRequestBytes).intValue, limit > 0 else {
            throw CouchError.badRequest(refusal)
        }
        return limit
    }

    /// `POST /db/_compact`: runs compaction in the background and answers 202 at once; `compact_running` is
    /// true until its effects (ancestor bodies dropped, unreferenced blobs swept) are complete.
    func compact(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        try c.request.requireJSONContent()
        let name = database.name
        compactions.begin(name)
        Thread.detachNewThread { [self] in
            defer { compactions.end(name) }
            do {
                try compactWithBlobs(database)
            } catch {
                log.error("compaction failed", ["db.name": database.name, "error": String(describing: error)])
            }
        }
        return .json(.accepted, ["ok": true])
    }

    /// `POST /db/_compact/ddoc` compacts a design document's view indexes, of which couchlite keeps none: 202 when
    /// the design document exists, else 404 as CouchDB.
    func compactDesign(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        let design = try c.parameter("design")
        try c.request.requireJSONContent()
        let ddocID = "_design/" + design
        guard let ddoc = try database.document(ddocID), !ddoc.deleted else { throw CouchError.notFound("missing") }
        return .json(.accepted, ["ok": true])
    }

    /// `POST /db/_compact`'s work: drops non-leaf bodies and attachment rows, then deletes every
    /// blob no revision references, sparing blobs written since shortly before compaction began.
    /// - Returns: How many blobs were removed.
    @discardableResult
    private func compactWithBlobs(_ database: Database) throws -> Int {
        let started = ContinuousClock().now
        return try sweepBlobs(database, keeping: database.compact(), since: started)
    }

    /// Deletes every blob of `database` not in `keep` (the keys its revisions reference, read at `started`),
    /// sparing blobs written since shortly before then: an upload in flight is not referenced yet.
    /// - Returns: How many blobs were removed.
    @discardableResult
    func sweepBlobs(_ database: Database, keeping keep: Set<String>, since started: ContinuousClock.Instant) throws
        -> Int
    {
        let store = try blobRegistry.store(for: database.name)
        return try blobRegistry.sweepGate.exclusive {
            let grace = (ContinuousClock().now - started) + .seconds(BlobRegistry.sweepGraceSeconds)
            return try store.removeAll(except: keep, minimumAge: grace)
        }
    }

    // MARK: _security

    /// `GET /db/_security`.
    func securityObject(_ c: RequestContext) throws -> Response {
        return try .json(.ok, .object(security.security(of: c.database().name).json))
    }

    /// `PUT /db/_security` (its row: the database's admins); `_users`' only when `users_db_security_editable` is on.
    func setSecurityObject(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        if database.name == App.usersDatabase && !usersDBSecurityEditable {
            throw CouchError.forbidden("You can't edit the security object of the user database.")
        }
        try c.request.requireJSONContent()
        let object = try SecurityObject(c.request.jsonBody(limit: Limits.smallRequestBytes))
        try security.setSecurity(object, of: database.name)
        return .json(.ok, ["ok": true])
    }
}

extension DatabaseHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/_dbs_info", .serverAdmin, notAllowedReason: "GET,HEAD,POST", databasesInfo),
            Route([.POST], "/_dbs_info", .serverAdmin, body: .small, databasesInfoForKeys),
            Route(read, "/{db}", .usersMember, drop: .ownDatabase, onlyIn: App.usersDatabase, info),
            Route([.DELETE], "/{db}", .serverAdmin, notAllowedReason: "DELETE,GET,HEAD,POST", delete),
            Route(read, "/{db}", .member, drop: .ownDatabase, info),
            Route([.PUT], "/{db}", .serverAdmin, drop: .exists, create),
            Route([.POST], "/{db}/_ensure_full_commit", .member, drop: .ownDatabase, ensureFullCommit),
            Route([.GET, .HEAD], "/{db}/_revs_limit", .member, notAllowedReason: "PUT,GET", revsLimit),
            Route([.PUT], "/{db}/_revs_limit", .databaseAdmin, body: .small, setRevsLimit),
            Route([.POST], "/{db}/_compact", .maintenanceAdmin, body: .small, compact),
            Route([.POST], "/{db}/_compact/{design}", .maintenanceAdmin, body: .small, compactDesign),
            Route(read, "/{db}/_shards", .member, notAllowedReason: "GET", shards),
            Route(read, "/{db}/_shards/{doc}", .member, notAllowedReason: "GET", shard),
            Route([.POST], "/{db}/_sync_shards", .serverAdmin, notAllowedReason: "POST", syncShards),
            Route(read, "/{db}/_security", .member, notAllowedReason: "PUT,GET", securityObject),
            Route([.PUT], "/{db}/_security", .databaseAdmin, body: .small, setSecurityObject),
            Route(HTTPMethod.allCases, "/{db}/_temp_view", .member) { _ in
                throw CouchError.gone("Temporary views are not supported in CouchDB")
            },
            Route([.POST], "/{db}/_purge", .serverAdmin, body: .small, notAllowedReason: "POST", purge),
            Route([.GET], "/{db}/_purged_infos_limit", .serverAdmin, notAllowedReason: "GET,PUT", purgedInfosLimit),
            Route(
                [.PUT], "/{db}/_purged_infos_limit", .serverAdmin, body: .small, notAllowedReason: "GET,PUT",
                setPurgedInfosLimit),
        ]
    }
}
