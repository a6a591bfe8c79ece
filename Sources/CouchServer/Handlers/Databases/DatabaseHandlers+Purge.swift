import CouchStore
import CouchWire
import RevTree

/// `POST /db/_purge` and `GET/PUT /db/_purged_infos_limit` (server admins only, as `chttpd_auth_request` has it).
extension DatabaseHandlers {
    /// CouchDB's `[purge] max_document_id_number` and `max_revisions_number`: a request naming more documents or
    /// revisions is refused whole.
    static var maxPurgeDocuments: Int { Limits.live.maxPurgeDocuments.value }
    static var maxPurgeRevisions: Int { Limits.live.maxPurgeRevisions.value }

    /// `POST /db/_purge` `{id: [rev, …], …}`: 201 with `{"purge_seq":null,"purged":{id: [purged revs]}}`, each id
    /// in request order with the leaves it really removed. Blobs no remaining revision references are swept as
    /// after compaction.
    func purge(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        try c.request.requireJSONContent()
        let requests = try DatabaseHandlers.purgeRequests(c.request.jsonObjectBody(limit: Limits.smallRequestBytes))
        let outcome = try database.purge(requests)
        try sweepBlobs(database, keeping: outcome.referencedBlobKeys, since: ContinuousClock().now)
        let purged = JSONObject(outcome.results.map { ($0.docID, .array($0.purged.map { .string($0.description) })) })
        return .json(.created, .object(JSONObject([("purge_seq", .null), ("purged", .object(purged))])))
    }

    /// Parses the body as `chttpd_db` does, limits first (`Exceeded maximum number of …`), then each rev.
    static func purgeRequests(_ body: JSONObject) throws(CouchError) -> [(docID: String, revs: [RevID])] {
        guard body.count <= maxPurgeDocuments else { throw .badRequest("Exceeded maximum number of documents.") }
        var requests = [(docID: String, revs: [RevID])]()
        var revisions = 0
        for (id, value) in body {
            guard let list = value.arrayValue else { throw .badRequest("Invalid list of revisions") }
            revisions += list.count
            guard revisions <= maxPurgeRevisions else { throw .badRequest("Exceeded maximum number of revisions.") }
            var revs = [RevID]()
            for rev in list {
                guard let text = rev.stringValue, let parsed = try? RevID(parsing: text) else {
                    throw .badRequest("Invalid rev format")
                }
                revs.append(parsed)
            }
            requests.append((id, revs))
        }
        return requests
    }

    /// `GET /db/_purged_infos_limit`.
    func purgedInfosLimit(_ c: RequestContext) throws -> Response {
        return try .json(.ok, .number(JSONNumber(c.database().purgedInfosLimit())))
    }

    /// `PUT /db/_purged_infos_limit` with a positive integer.
    func setPurgedInfosLimit(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        let refusal = "`purged_infos_limit` must be positive integer"  // sic, CouchDB's words
        try database.setPurgedInfosLimit(DatabaseHandlers.positiveLimit(c, refusal: refusal))
        return .json(.ok, ["ok": true])
    }
}
