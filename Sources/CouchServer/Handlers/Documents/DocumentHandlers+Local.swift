import CouchStore
import CouchWire

/// `_local/` documents: no revision tree, `0-N` revs, never in `_changes` or `_all_docs`, and never
/// a 409 (a replicator's checkpoint write must always land). What the drop credentials may do here is their rows'
/// (`DropScope.checkpoint`: not couchlite's own `_local` documents, only those they created (`DropLedger.writeLocal`);
/// no `DELETE` at all).
extension DocumentHandlers {
    /// couch_httpd_db: `/db/_local` with anything but exactly one more segment.
    static func refuseLocalAttachment() throws -> Never {
        throw CouchError.badRequest("_local documents do not accept attachments.")
    }

    /// `GET /db/_local/id`.
    func getLocal(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        // The drop credentials read only the checkpoints they created (by the id's bytes): any other `_local`
        // document is absent to them.
        if let drop = c.user.drop, !drop.ownsLocal(docID) { throw CouchError.notFound("missing") }
        guard let local = try c.database().localDocument(docID) else { throw CouchError.notFound("missing") }
        var doc = JSONObject()
        doc["_id"] = .string(docID)
        doc["_rev"] = .string("0-\(local.rev)")
        if case .object(let fields) = try JSON.parse(local.body) {
            for (key, value) in fields { doc[key] = value }
        }
        return .json(.ok, .object(doc))
    }

    /// `PUT /db/_local/id`.
    func putLocal(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let input = try DocumentInput(try c.request.documentJSONBody(), local: true)
        let rev = try documents.putLocal(c.database(), docID, input: input, user: c.user)
        return .json(.created, ["ok": true, "id": .string(docID), "rev": .string(rev)])
    }

    /// `DELETE /db/_local/id`.
    func deleteLocal(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        guard try c.database().deleteLocal(docID) else { throw CouchError.notFound("missing") }
        return .json(.ok, ["ok": true, "id": .string(docID), "rev": "0-0"])
    }
}
