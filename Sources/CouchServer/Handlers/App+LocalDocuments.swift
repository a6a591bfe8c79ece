import CouchWire
import RevTree

/// `_local/` documents: no revision tree, `0-N` revs, never in `_changes` or `_all_docs`, and never
/// a 409 (a replicator's checkpoint write must always land).
extension App {
    func localDocument(_ database: Database, _ docID: String, _ request: Request, _ reply: Reply) throws {
        try DocumentID.validate(docID)
        try RequestAuthorizer.requireUnreservedLocal(docID, request.user.scope)
        switch request.method {
        case "GET", "HEAD":
            guard let local = try database.localDocument(docID) else { throw CouchError.notFound("missing") }
            var doc = JSONObject()
            doc["_id"] = .string(docID)
            doc["_rev"] = .string("0-\(local.rev)")
            if case .object(let fields) = try JSON.parse(local.body) {
                for (key, value) in fields { doc[key] = value }
            }
            try reply.json(200, .object(doc))
        case "PUT":
            let input = try DocumentInput(try request.documentJSONBody(), local: true)
            let rev = try putLocal(database, docID, input: input, user: request.user)
            try reply.json(201, ["ok": true, "id": .string(docID), "rev": .string(rev)])
        case "DELETE":
            guard try database.deleteLocal(docID) else { throw CouchError.notFound("missing") }
            try reply.json(200, ["ok": true, "id": .string(docID), "rev": "0-0"])
        default:
            throw CouchError.methodNotAllowed("DELETE,GET,HEAD,PUT")
        }
    }

    /// Stores a local document's fields and returns its new `0-N` rev.
    func putLocal(_ database: Database, _ docID: String, input: DocumentInput, user: UserContext) throws -> String {
        try RequestAuthorizer.requireUnreservedLocal(docID, user.scope)
        if input.deleted {
            _ = try database.deleteLocal(docID)
            return "0-0"
        }
        // `0-N` as sent; the store answers N + 1 without a conflict check, as CouchDB does.
        var previous: Int?
        if let rev = input.rev {
            guard rev.pos == 0, let n = Int(rev.hash), n >= 0 else { throw CouchError.invalidRev }
            previous = n
        }
        let n = try database.putLocal(docID, body: input.bodyBytes, rev: previous)
        return "0-\(n)"
    }
}
