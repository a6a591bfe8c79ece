import CouchWire
import Foundation
import RevTree

/// Database-level endpoints: create, info, delete, and the small maintenance calls replicators make.
extension App {
    /// `GET /db`.
    func getDatabase(_ c: RequestContext) throws {
        try c.reply.json(200, try databaseInfo(openDatabase(c.databaseName())))
    }

    /// `PUT /db`. A created database starts from the default `_security`.
    func createDatabase(_ c: RequestContext) throws {
        let name = try c.databaseName()
        try App.validateShardParameters(c.query)
        try App.validateDatabaseName(name)
        do {
            // Blobs a crashed earlier incarnation of this name left behind are not ours; they go
            // before the database is visible, so no request can store a blob that is then removed.
            _ = try store.create(name) { try? blobRegistry.destroy(name) }
        } catch {
            throw CouchError(error)
        }
        access.security.reset(name)
        var headers = HTTPHeaders()
        headers.set("Location", "/" + PercentEncoding.segment(name))
        try c.reply.json(201, ["ok": true], headers: headers)
    }

    /// `DELETE /db`: its `_security` goes back to the default and its indexes go with it (a new database of the same
    /// name has another uuid anyway).
    func deleteDatabase(_ c: RequestContext) throws {
        let name = try c.databaseName()
        do {
            try store.delete(name)
        } catch {
            throw CouchError(error)
        }
        try blobRegistry.destroy(name)
        access.security.reset(name)
        views.drop(name)
        try c.reply.json(200, ["ok": true])
    }

    func databaseInfo(_ database: Database) throws -> JSON {
        let info = try database.info()
        return [
            "instance_start_time": "0",
            "db_name": .string(info.name),
            "purge_seq": Seq.json(info.purgeSeq),
            "update_seq": Seq.json(info.updateSeq),
            "sizes": [
                "file": .number(JSONNumber(info.fileSize)),
                "external": .number(JSONNumber(info.externalSize)),
                "active": .number(JSONNumber(info.activeSize)),
            ],
            "props": [:],
            "doc_del_count": .number(JSONNumber(info.docDelCount)),
            "doc_count": .number(JSONNumber(info.docCount)),
            "disk_format_version": 8,
            "compact_running": .bool(compactions.isRunning(info.name)),
            "cluster": ["q": 1, "n": 1, "w": 1, "r": 1],
        ]
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
    static func validateDatabaseName(_ name: String) throws(CouchError) {
        if systemDatabases.contains(name) { return }
        let bytes = Array(name.utf8)
        guard let first = bytes.first, first >= UInt8(ascii: "a"), first <= UInt8(ascii: "z"),
            bytes.count <= Limits.databaseNameBytes
        else {
            throw .illegalDatabaseName(name)
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_$()+/-".utf8)
        guard bytes.allSatisfy({ allowed.contains($0) }) else { throw .illegalDatabaseName(name) }
    }

    /// `POST /db/_ensure_full_commit`: every acknowledged write is already durable.
    func ensureFullCommit(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try reply.json(201, ["ok": true, "instance_start_time": "0"])
    }

    func revsLimit(_ database: Database, _ request: Request, _ reply: Reply) throws {
        switch request.method {
        case "GET", "HEAD":
            try reply.json(200, .number(JSONNumber(database.revsLimit)))
        case "PUT":
            guard let limit = try request.jsonBody(limit: Limits.smallRequestBytes).intValue, limit > 0 else {
                throw CouchError.badRequest("`revs_limit` must be a positive integer")
            }
            try database.setRevsLimit(limit)
            try reply.json(200, ["ok": true])
        default:
            throw CouchError.methodNotAllowed("GET,PUT")  // the route table admits no other method
        }
    }

    /// `POST /db/_compact`: runs compaction in the background and answers 202 at once; `compact_running` is
    /// true until its effects (ancestor bodies dropped, unreferenced blobs swept) are complete.
    /// `POST /db/_compact/ddoc` compacts a design document's view indexes, of which couchlite keeps none: 202 when
    /// the design document exists, else 404 as CouchDB.
    func compact(_ database: Database, design: String?, _ request: Request, _ reply: Reply) throws {
        if let type = request.contentType, type != "application/json" {
            throw CouchError.badContentType("Content-Type must be application/json")
        }
        if let design {
            let ddocID = "_design/" + design
            guard let ddoc = try database.document(ddocID), !ddoc.deleted else { throw CouchError.notFound("missing") }
            return try reply.json(202, ["ok": true])
        }
        let log = self.log
        let app = self
        let name = database.name
        compactions.begin(name)
        Thread.detachNewThread {
            defer { app.compactions.end(name) }
            do {
                try app.compactWithBlobs(database)
            } catch {
                log.error("compaction failed", ["db.name": database.name, "error": String(describing: error)])
            }
        }
        try reply.json(202, ["ok": true])
    }
}

/// Update sequences on the wire, in CouchDB 3's `N-<opaque>` shape (`UpdateSeq`).
enum Seq {
    static func json(_ seq: Int) -> JSON { .string(UpdateSeq.format(seq)) }
}
