import CouchCrypto
import CouchWire
import RevTree

/// Server-level endpoints: `/`, `/_up`, `/_all_dbs`, `/_uuids` (`/_session` is in Auth/App+Session.swift).
extension App {
    func serverRoot(_ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD")
        let body: JSON = [
            "couchdb": "Welcome",
            "version": .string(App.couchDBVersion),
            "uuid": .string(serverUUID),
            "features": ["replication", "attachments"],
            "vendor": ["name": "couchlite", "version": .string(App.version)],
        ]
        try reply.json(200, body)
    }

    func up(_ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD")
        try reply.json(200, ["status": "ok"])
    }

    func allDatabases(_ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD")
        let range = try KeyRange(request.query)
        var names = store.databaseNames().filter { range.contains($0) }
        if range.descending { names.reverse() }
        let skip = try request.query.int("skip") ?? 0
        let limit = try request.query.int("limit")
        let page = names.dropFirst(skip).prefix(limit ?? Int.max)
        try reply.json(200, .array(page.map { .string($0) }))
    }

    /// `GET /_uuids?count=N`: random 128-bit ids as 32 lowercase hex digits.
    func uuids(_ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD")
        let count = try request.query.int("count") ?? 1
        guard count <= Limits.maxUUIDCount else { throw CouchError.badRequest("count parameter too large") }
        let uuids = (0..<count).map { _ in JSON.string(Secrets.randomBytes(16).hexString) }
        var headers = HTTPHeaders()
        headers.set("Cache-Control", "must-revalidate, no-cache")
        headers.set("Pragma", "no-cache")
        try reply.json(200, ["uuids": .array(uuids)], headers: headers)
    }

}

/// The `startkey`/`endkey` family of query parameters over string keys (`_all_dbs`, `_all_docs`).
struct KeyRange {
    var startKey: String?
    var endKey: String?
    var inclusiveEnd = true
    var descending = false

    init(startKey: String? = nil, endKey: String? = nil, inclusiveEnd: Bool = true, descending: Bool = false) {
        self.startKey = startKey
        self.endKey = endKey
        self.inclusiveEnd = inclusiveEnd
        self.descending = descending
    }

    init(_ query: QueryParameters) throws(CouchError) {
        descending = try query.viewBool("descending")
        inclusiveEnd = try query.viewBool("inclusive_end", default: true)
        startKey = try KeyRange.stringKey(query, "startkey", "start_key")
        endKey = try KeyRange.stringKey(query, "endkey", "end_key")
        if let key = try KeyRange.stringKey(query, "key") {
            startKey = key
            endKey = key
            inclusiveEnd = true
        }
    }

    /// Reads a JSON-encoded string key, trying each spelling.
    static func stringKey(_ query: QueryParameters, _ names: String...) throws(CouchError) -> String? {
        for name in names {
            guard let value = try query.json(name) else { continue }
            guard let string = value.stringValue else {
                throw .queryParseError("Invalid \(name) value: keys must be strings here")
            }
            return string
        }
        return nil
    }

    /// Whether `key` falls inside the range, in the direction of iteration.
    func contains(_ key: String) -> Bool {
        let k = Array(key.utf8)
        if descending {
            if let start = startKey, k.lexicographicallyPrecedes(Array(start.utf8)) == false, k != Array(start.utf8) {
                return false
            }
            if let end = endKey {
                let e = Array(end.utf8)
                if k.lexicographicallyPrecedes(e) || (!inclusiveEnd && k == e) { return false }
            }
        } else {
            if let start = startKey, k.lexicographicallyPrecedes(Array(start.utf8)) { return false }
            if let end = endKey {
                let e = Array(end.utf8)
                if e.lexicographicallyPrecedes(k) || (!inclusiveEnd && k == e) { return false }
            }
        }
        return true
    }
}
