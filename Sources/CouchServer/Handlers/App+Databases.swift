import CouchWire
import Foundation
import RevTree

/// Database-level endpoints: create, info, delete, and the small maintenance calls replicators make.
extension App {
    func databaseRoot(_ name: String, _ request: Request, _ reply: Reply) throws {
        switch request.method {
        case "GET", "HEAD":
            let database = try openDatabase(name)
            try reply.json(200, try databaseInfo(database))
        case "PUT":
            try App.validateShardParameters(request.query)
            try App.validateDatabaseName(name)
            do {
                _ = try store.create(name)
            } catch {
                throw CouchError(error)
            }
            // Blobs a crashed earlier incarnation of this name left behind are not ours.
            try blobRegistry.destroy(name)
            var headers = HTTPHeaders()
            headers.set("Location", "/" + PercentEncoding.encodeSegment(name))
            try reply.json(201, ["ok": true], headers: headers)
        case "DELETE":
            do {
                try store.delete(name)
            } catch {
                throw CouchError(error)
            }
            try blobRegistry.destroy(name)
            try reply.json(200, ["ok": true])
        case "POST":
            let database = try openDatabase(name)
            try postDocument(database, request, reply)
        default:
            throw CouchError.methodNotAllowed("DELETE,GET,HEAD,POST,PUT")
        }
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
            "compact_running": false,
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
        try require(request, "POST")
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
            throw CouchError.methodNotAllowed("GET,PUT")
        }
    }

    /// `POST /db/_compact`: runs compaction in the background and answers 202 at once.
    func compact(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "POST")
        if let type = request.contentType, type != "application/json" {
            throw CouchError.badContentType("Content-Type must be application/json")
        }
        let log = self.log
        let app = self
        Thread.detachNewThread {
            do {
                try app.compactWithBlobs(database)
            } catch {
                log.error("compaction failed", ["db.name": database.name, "error": String(describing: error)])
            }
        }
        try reply.json(202, ["ok": true])
    }
}

/// Update sequences on the wire. CouchDB 3 sends opaque strings; we send the decimal sequence as a
/// string (`"12"`), and accept numbers, such strings, `"12-anything"` (a CouchDB-style token) and
/// `now` back.
enum Seq {
    static func json(_ seq: Int) -> JSON { .string(String(seq)) }

    /// Parses a `since`/`last_seq` value; nil when it is not a sequence.
    static func parse(_ text: String) -> Int? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count == text.count || text.dropFirst(digits.count).first == "-" else {
            return nil
        }
        return Int(digits)
    }
}
