import CouchCrypto
import CouchWire
import Foundation
import RevTree

/// `GET/HEAD/PUT/DELETE /db/doc` and `POST /db`.
extension App {
    func document(_ database: Database, _ docID: String, _ request: Request, _ reply: Reply) throws {
        try DocumentID.validate(docID)
        switch request.method {
        case "GET", "HEAD": try getDocument(database, docID, request, reply)
        case "PUT": try putDocument(database, docID, request, reply)
        case "DELETE": try deleteDocument(database, docID, request, reply)
        case "POST":
            // CouchDB answers form uploads on POST /db/doc (issue 5); plain POST is not a document write.
            try postAttachmentForm(database, docID, request, reply)
        case "COPY": try copyDocument(database, docID, request, reply)
        default: throw CouchError.methodNotAllowed("DELETE,GET,HEAD,POST,PUT,COPY")
        }
    }

    // MARK: Reading

    private func getDocument(_ database: Database, _ docID: String, _ request: Request, _ reply: Reply) throws {
        let query = request.query
        if let openRevs = query["open_revs"] {
            return try getOpenRevs(database, docID, openRevs, request, reply)
        }
        var options = try RenderOptions(query)
        let revision: StoredRevision
        // `latest=true` opens the winner whatever `rev` names (chttpd_db: "couch_doc_open will open the winning
        // rev despite of a rev passed"); the rev must still parse.
        let rev = try query["rev"].map(DocumentInput.parseRev)
        if let rev, !query.isExactlyTrue("latest") {
            guard let found = try database.revision(docID, rev: rev), found.body != nil || found.deleted else {
                throw CouchError.notFound("missing")
            }
            revision = found
        } else {
            guard let winner = try database.revision(docID, rev: nil) else { throw CouchError.notFound("missing") }
            // `deleted=true` reads a deleted winner (`{"_id","_rev","_deleted":true}`) instead of a 404.
            guard !winner.deleted || query.isExactlyTrue("deleted") else { throw CouchError.notFound("deleted") }
            revision = winner
        }
        // The tree is read only when the answer needs it (a plain GET is one indexed lookup).
        let needsTree = options.conflicts || options.deletedConflicts || options.revsInfo
        let info = needsTree ? try database.document(docID) : nil
        let etag = "\"\(revision.rev)\""
        if request.head.headers["If-None-Match"] == etag {
            return try reply.bytes(304, [], headers: ["ETag": etag])
        }
        if wantsMultipart(request, accept: "multipart/related"),
            revision.attachments.contains(where: { options.sendsData(revpos: $0.revpos) })
        {
            options.attachments = true
            options.follows = true
            return try sendMultipartRelated(
                database, docID, info: info, revision: revision, options: options, reply: reply, etag: etag)
        }
        let inline = InlineAttachments(self, database)
        let renderer = DocumentRenderer(id: docID, info: info, options: options, inline: inline)
        try replyJSON(.object(try renderer.render(revision)), inline: inline, headers: ["ETag": etag], reply)
    }

    /// `open_revs=all` or `open_revs=["1-a",…]`, as a JSON array of `{"ok":doc}`/`{"missing":rev}`,
    /// or as `multipart/mixed` when the client asks for it (the CouchDB replicator does).
    private func getOpenRevs(
        _ database: Database, _ docID: String, _ openRevs: String, _ request: Request, _ reply: Reply
    ) throws {
        var options = try RenderOptions(request.query)
        let latest = request.query.isExactlyTrue("latest")
        let info = try database.document(docID)
        var results: [(rev: RevID, revision: StoredRevision?)] = []
        if openRevs == "all" {
            guard info != nil else { throw CouchError.notFound("missing") }
            for leaf in try database.leafRevisions(docID) { results.append((leaf.rev, leaf)) }
        } else {
            let requested: [RevID]
            do {
                requested = try RenderOptions.revList(try JSON.parse(openRevs))
            } catch let error as CouchError {
                throw error
            } catch {
                throw CouchError.badRequest("invalid UTF-8 JSON")
            }
            var seen = Set<RevID>()
            for rev in requested {
                let targets = latest ? info?.tree.latest(of: rev) ?? [rev] : [rev]
                for target in targets where seen.insert(target).inserted {
                    let found = try database.revision(docID, rev: target)
                    results.append((target, found.flatMap { $0.body != nil || $0.deleted ? $0 : nil }))
                }
            }
        }
        if wantsMultipart(request, accept: "multipart/mixed") {
            options.follows = true
            return try sendOpenRevsMultipart(
                database, docID, info: info, results: results, options: options, reply: reply)
        }
        let inline = InlineAttachments(self, database)
        let renderer = DocumentRenderer(id: docID, info: info, options: options, inline: inline)
        var array: [JSON] = []
        for (rev, revision) in results {
            if let revision {
                array.append(["ok": .object(try renderer.render(revision))])
            } else {
                array.append(["missing": .string(rev.description)])
            }
        }
        try replyJSON(.array(array), inline: inline, reply)
    }

    /// Whether the `Accept` header asks for the given multipart type.
    func wantsMultipart(_ request: Request, accept type: String) -> Bool {
        guard let accept = request.head.headers["Accept"], accept.utf8.count >= type.utf8.count else { return false }
        // Most requests accept `application/json` only; look closer only when a multipart type is named.
        guard accept.range(of: type, options: .caseInsensitive) != nil else { return false }
        return accept.lowercased().split(separator: ",").contains { $0.trimmingPrefix(" ").hasPrefix(type) }
    }

    // MARK: Writing

    private func putDocument(_ database: Database, _ docID: String, _ request: Request, _ reply: Reply) throws {
        if docID.hasBytePrefix("_local/") { return try localDocument(database, docID, request, reply) }
        let newEdits = request.query.newEdits
        let (input, followed) = try readDocumentBody(request)
        // The URL names the document; a different `_id` in the body must be a valid id and is then ignored,
        // as in CouchDB (`couch_doc_from_req`).
        if let bodyID = input.id, !bodyID.utf8Equals(docID) { try DocumentID.validate(bodyID) }
        var base = input.rev
        if let revText = request.query["rev"] { base = try DocumentInput.parseRev(revText) }
        if let ifMatch = request.head.headers["If-Match"] {
            base = try DocumentInput.parseRev(ifMatch.trimmingCharacters(in: "\""))
        }
        if request.isBatch {
            return try writeBatched(docID: docID, reply: reply) {
                _ = try writeOne(
                    database, docID: docID, input: input, base: base, newEdits: newEdits, followed: followed,
                    user: request.user)
            }
        }
        let rev = try writeOne(
            database, docID: docID, input: input, base: base, newEdits: newEdits, followed: followed, user: request.user
        )
        try sendWriteResult(docID: docID, rev: rev, status: 201, request: request, reply: reply)
    }

    /// `batch=ok`: CouchDB answers 202 `{"ok":true,"id":…}` with no rev and writes later, so a conflict is only
    /// logged. We write at once (nothing acknowledged is ever lost) and answer the same; a write refused for a
    /// conflict is dropped as CouchDB drops it, every other error is still answered.
    private func writeBatched(docID: String, reply: Reply, _ write: () throws -> Void) throws {
        do {
            try write()
        } catch CouchError.conflict {
            log.info("batch write conflict", ["id": docID])
        }
        try reply.json(202, ["ok": true, "id": .string(docID)])
    }

    private func deleteDocument(_ database: Database, _ docID: String, _ request: Request, _ reply: Reply) throws {
        var base: RevID?
        if let revText = request.query["rev"] { base = try DocumentInput.parseRev(revText) }
        if let ifMatch = request.head.headers["If-Match"] {
            base = try DocumentInput.parseRev(ifMatch.trimmingCharacters(in: "\""))
        }
        guard let base else { throw CouchError.conflict }
        var input = try DocumentInput(.object(JSONObject()))
        input.deleted = true
        let rev = try writeOne(
            database, docID: docID, input: input, base: base, newEdits: true, followed: nil, user: request.user)
        try sendWriteResult(docID: docID, rev: rev, status: 200, request: request, reply: reply)
    }

    /// `POST /db`: a new document, with a generated id unless the body has one.
    func postDocument(_ database: Database, _ request: Request, _ reply: Reply) throws {
        if let type = request.contentType, type != "application/json" {
            throw CouchError.badContentType("Content-Type must be application/json")
        }
        let json = try request.jsonBody(limit: Limits.documentBytes)
        let input = try DocumentInput(json, local: json["_id"]?.stringValue?.hasBytePrefix("_local/") == true)
        let docID = input.id ?? Secrets.randomBytes(16).hexString
        try DocumentID.validate(docID)
        if docID.hasBytePrefix("_local/") {
            let rev = try putLocal(database, docID, input: input, user: request.user)
            return try reply.json(201, ["ok": true, "id": .string(docID), "rev": .string(rev)])
        }
        if request.isBatch {
            return try writeBatched(docID: docID, reply: reply) {
                _ = try writeOne(
                    database, docID: docID, input: input, base: input.rev, newEdits: true, followed: nil,
                    user: request.user)
            }
        }
        let rev = try writeOne(
            database, docID: docID, input: input, base: input.rev, newEdits: true, followed: nil, user: request.user)
        try sendWriteResult(docID: docID, rev: rev, status: 201, request: request, reply: reply)
    }

    func sendWriteResult(docID: String, rev: RevID, status: Int, request: Request, reply: Reply) throws {
        var headers = HTTPHeaders()
        headers.set("ETag", "\"\(rev)\"")
        if status == 201 {
            let db = request.segments.first ?? ""
            headers.set("Location", "/\(PercentEncoding.segment(db))/\(PercentEncoding.segment(docID))")
        }
        try reply.json(status, ["ok": true, "id": .string(docID), "rev": .string(rev.description)], headers: headers)
    }

    /// Writes one document revision and returns its rev, or throws its error.
    func writeOne(
        _ database: Database, docID: String, input: DocumentInput, base: RevID?, newEdits: Bool,
        followed: FollowedAttachments?, user: UserContext
    ) throws -> RevID {
        let write = try makeWrite(
            database, docID: docID, input: input, base: base, newEdits: newEdits, followed: followed, user: user)
        let results =
            newEdits
            ? try applyValidatedEdits(database, [write], user: user)
            : try applyValidatedReplicated(database, [write], user: user)
        guard let result = results.first else { throw CouchError.unknownError("store returned no result") }
        switch result.result {
        case .success(let rev): return rev
        case .failure(let error): throw CouchError(error, docID: docID)
        }
    }

    /// Turns a parsed document into a store write, ingesting any attachment data it carries.
    func makeWrite(
        _ database: Database, docID: String, input: DocumentInput, base: RevID?, newEdits: Bool,
        followed: FollowedAttachments?, user: UserContext
    ) throws -> RevisionWrite {
        try requireDesignWriteAccess(database, docID: docID, user)  // members may not write design documents
        let path: [RevID]
        if newEdits {
            path = base.map { [$0] } ?? []
        } else {
            path = try input.replicatedPath()
        }
        let newPos = newEdits ? (base?.pos ?? 0) + 1 : (path.first?.pos ?? 1)
        let attachments = try ingestAttachments(
            database, input.attachments, newRevPos: newPos, replicated: !newEdits, followed: followed)
        let body = input.bodyBytes
        guard body.count <= Limits.documentBytes else {
            throw CouchError.documentTooLarge(docID)
        }
        return RevisionWrite(docID: docID, path: path, deleted: input.deleted, body: body, attachments: attachments)
    }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}
