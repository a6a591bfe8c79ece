import CouchStore
import CouchWire
import RevTree

/// `COPY /db/doc` with `Destination: target` (or `target?rev=R` to overwrite an existing target), as CouchDB's
/// `chttpd_db` does it: the source revision (the winner, or `?rev=`/`If-Match`) is written as a new revision of
/// the target, body and attachments alike.
extension DocumentHandlers {
    func copy(_ c: RequestContext) throws -> Response {
        let sourceID = try c.docID()
        let (database, request) = (try c.database(), c.request)
        var sourceRev = try request.query["rev"].map(DocumentInput.parseRev)
        if let ifMatch = request.head.headers["If-Match"] {
            sourceRev = try DocumentInput.parseRev(ifMatch.trimmingCharacters(in: "\""))
        }
        let (targetID, targetRev) = try DocumentHandlers.copyDestination(request.head.headers["Destination"])
        try DocumentID.validate(targetID)
        guard !targetID.hasBytePrefix("_local/") else {
            throw CouchError.badRequest("_local documents can not be the destination of a COPY.")
        }
        let source: StoredRevision
        if let sourceRev {
            guard let found = try database.revision(sourceID, rev: sourceRev), found.body != nil || found.deleted else {
                throw CouchError.notFound("missing")
            }
            source = found
        } else {
            guard let winner = try database.revision(sourceID, rev: nil) else { throw CouchError.notFound("missing") }
            guard !winner.deleted else { throw CouchError.notFound("deleted") }
            source = winner
        }
        try documents.requireDesignWriteAccess(database, docID: targetID, request.user)
        // Attachments are referenced, not re-read: the copy names the same content-addressed blobs.
        let write = RevisionWrite(
            docID: targetID, path: targetRev.map { [$0] } ?? [], deleted: source.deleted,
            body: source.body ?? Array("{}".utf8), attachments: source.attachments.map { .stored($0) })
        let result = try documents.applyEdit(database, write, user: request.user)
        switch result.result {
        case .success(let rev):
            return writeResult(database, docID: targetID, rev: rev, status: .created)
        case .failure(let error):
            throw CouchError(error)
        }
    }

    /// Splits a `Destination` header (`couch_httpd_db:parse_copy_destination_header`): a relative, percent-encoded
    /// document id, optionally followed by `?rev=R`.
    static func copyDestination(_ header: String?) throws(CouchError) -> (id: String, rev: RevID?) {
        guard let header else { throw .badRequest("Destination header is mandatory for COPY.") }
        let lowered = header.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            throw .badRequest("Destination URL must be relative.")
        }
        let pieces = header.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let id = PercentEncoding.decode(pieces[0], plusIsSpace: true) else {
            throw .badRequest("Invalid percent-encoding in Destination header")
        }
        guard pieces.count == 2 else { return (id, nil) }
        let query = pieces[1].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard query.count == 2 else { throw .badRequest("Destination header must end in ?rev=REV") }
        return (id, try DocumentInput.parseRev(String(query[1])))
    }
}
