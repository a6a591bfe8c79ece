import CouchCrypto
import CouchStore
import CouchWire
import Foundation
import RevTree

/// Documents: `GET/HEAD/PUT/DELETE/COPY /db/doc` (design documents too), `POST /db`, the HTML form upload
/// `POST /db/doc`, and `_local` documents.
struct DocumentHandlers: Sendable {
    let documents: DocumentWriter
    let blobs: BlobRegistry
    let log: Logger
}

extension DocumentHandlers {
    // MARK: Reading

    /// `GET /db/doc`: a revision (the winner, `?rev=`, `?open_revs=`), as JSON or `multipart/related`.
    func get(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let (database, request) = (try c.database(), c.request)
        let query = request.query
        if let openRevs = query["open_revs"] {
            return try getOpenRevs(database, docID, openRevs, request)
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
            options.dropMeta()
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
        if request.ifNoneMatch(etag) {
            return .bytes(.notModified, [], headers: ["ETag": etag])
        }
        if wantsMultipart(request, accept: "multipart/related"),
            revision.attachments.contains(where: { options.sendsData(revpos: $0.revpos) })
        {
            options.attachments = true
            options.follows = true
            return try sendMultipartRelated(
                database, docID, info: info, revision: revision, options: options, etag: etag)
        }
        let inline = InlineAttachments(blobs, database)
        let renderer = DocumentRenderer(id: docID, info: info, options: options, inline: inline)
        return .json(.object(try renderer.render(revision)), inline: inline, headers: ["ETag": etag])
    }

    /// `open_revs=all` or `open_revs=["1-a",…]`, as a JSON array of `{"ok":doc}`/`{"missing":rev}`,
    /// or as `multipart/mixed` when the client asks for it (the CouchDB replicator does).
    private func getOpenRevs(
        _ database: Database, _ docID: String, _ openRevs: String, _ request: Request
    ) throws -> Response {
        var options = try RenderOptions(request.query)
        options.dropMeta()
        let latest = request.query.isExactlyTrue("latest")
        let info = try database.document(docID)
        var results: [(rev: RevID, revision: StoredRevision?)] = []
        if openRevs == "all" {
            guard info != nil else { throw CouchError.notFound("missing") }
            // In CouchDB's order (`fabric_doc_open_revs` sorts the leaves: generation, then hash), not winner first.
            for leaf in try database.leafRevisions(docID).sorted(by: { $0.rev < $1.rev }) {
                results.append((leaf.rev, leaf))
            }
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
                database, docID, info: info, results: results, options: options)
        }
        let inline = InlineAttachments(blobs, database)
        let renderer = DocumentRenderer(id: docID, info: info, options: options, inline: inline)
        var array: [JSON] = []
        for (rev, revision) in results {
            if let revision {
                array.append(["ok": .object(try renderer.render(revision))])
            } else {
                array.append(["missing": .string(rev.description)])
            }
        }
        return .json(.array(array), inline: inline)
    }

    /// Whether the `Accept` header asks for the given multipart type.
    func wantsMultipart(_ request: Request, accept type: String) -> Bool {
        guard let accept = request.head.headers["Accept"], accept.utf8.count >= type.utf8.count else { return false }
        // Most requests accept `application/json` only; look closer only when a multipart type is named.
        guard accept.range(of: type, options: .caseInsensitive) != nil else { return false }
        return accept.lowercased().split(separator: ",").contains { $0.trimmingPrefix(" ").hasPrefix(type) }
    }

    // MARK: Writing

    /// `PUT /db/doc`: a new revision, from JSON or `multipart/related` (its attachments streamed to blobs first).
    func put(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let (database, request) = (try c.database(), c.request)
        let newEdits = request.query.newEdits
        let (input, followed) = try documents.readBody(request, database, docID: docID)
        // The URL names the document; a different `_id` in the body must be a valid id and is then ignored,
        // as in CouchDB (`couch_doc_from_req`).
        if let bodyID = input.id, !bodyID.utf8Equals(docID) { try DocumentID.validate(bodyID) }
        var base = input.rev
        if let revText = request.query["rev"] { base = try DocumentInput.parseRev(revText) }
        if let ifMatch = request.head.headers["If-Match"] {
            base = try DocumentInput.parseRev(ifMatch.trimmingCharacters(in: "\""))
        }
        if request.isBatch {
            return try writeBatched(docID: docID) {
                _ = try documents.writeOne(
                    database, docID: docID, input: input, base: base, newEdits: newEdits, followed: followed,
                    user: request.user)
            }
        }
        let rev = try documents.writeOne(
            database, docID: docID, input: input, base: base, newEdits: newEdits, followed: followed, user: request.user
        )
        return writeResult(database, docID: docID, rev: rev, status: .created)
    }

    /// `batch=ok`: CouchDB answers 202 `{"ok":true,"id":…}` with no rev and writes later, so a conflict is only
    /// logged. We write at once (nothing acknowledged is ever lost) and answer the same; a write refused for a
    /// conflict is dropped as CouchDB drops it, every other error is still answered.
    private func writeBatched(docID: String, _ write: () throws -> Void) throws -> Response {
        do {
            try write()
        } catch CouchError.conflict {
            log.info("batch write conflict", ["id": docID])
        }
        return .json(.accepted, ["ok": true, "id": .string(docID)])
    }

    /// `DELETE /db/doc?rev=…`.
    func delete(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let (database, request) = (try c.database(), c.request)
        var base: RevID?
        if let revText = request.query["rev"] { base = try DocumentInput.parseRev(revText) }
        if let ifMatch = request.head.headers["If-Match"] {
            base = try DocumentInput.parseRev(ifMatch.trimmingCharacters(in: "\""))
        }
        guard let base else { throw CouchError.conflict }
        var input = try DocumentInput(.object(JSONObject()))
        input.deleted = true
        let rev = try documents.writeOne(
            database, docID: docID, input: input, base: base, newEdits: true, followed: nil, user: request.user)
        return writeResult(database, docID: docID, rev: rev, status: .ok)
    }

    /// `POST /db`: a new document, with a generated id unless the body has one.
    func post(_ c: RequestContext) throws -> Response {
        let (database, request) = (try c.database(), c.request)
        try request.requireJSONContent()
        let json = try request.jsonBody(limit: Limits.documentBytes)
        let input = try DocumentInput(json, local: json["_id"]?.stringValue?.hasBytePrefix("_local/") == true)
        let docID = input.id ?? Secrets.randomBytes(16).hexString
        try DocumentID.validate(docID)
        if docID.hasBytePrefix("_local/") {
            let rev = try documents.putLocal(database, docID, input: input, user: request.user)
            return .json(.created, ["ok": true, "id": .string(docID), "rev": .string(rev)])
        }
        if request.isBatch {
            return try writeBatched(docID: docID) {
                _ = try documents.writeOne(
                    database, docID: docID, input: input, base: input.rev, newEdits: true, followed: nil,
                    user: request.user)
            }
        }
        let rev = try documents.writeOne(
            database, docID: docID, input: input, base: input.rev, newEdits: true, followed: nil, user: request.user)
        return writeResult(database, docID: docID, rev: rev, status: .created)
    }

    func writeResult(_ database: Database, docID: String, rev: RevID, status: Response.Status) -> Response {
        var headers = HTTPHeaders()
        headers.set("ETag", "\"\(rev)\"")
        if status == .created {
            let db = database.name
            headers.set("Location", "/\(PercentEncoding.segment(db))/\(PercentEncoding.segment(docID))")
        }
        return .json(status, ["ok": true, "id": .string(docID), "rev": .string(rev.description)], headers: headers)
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

extension DocumentHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route([.POST], "/{db}", .member, body: .document, post),
            Route([.POST], "/{db}/_bulk_docs", .member, drop: .upload, body: .bulk, bulkDocs),
            // MARK: Local documents
            Route(HTTPMethod.allCases, "/{db}/_local", .member) { _ in try Self.refuseLocalAttachment() },
            Route(read, "/{db}/_local/{local}", .member, drop: .checkpoint, getLocal),
            Route([.PUT], "/{db}/_local/{local}", .member, drop: .checkpoint, body: .document, putLocal),
            Route([.DELETE], "/{db}/_local/{local}", .member, deleteLocal),
            // An HTML form's upload, as for any document (415 unless multipart/form-data); a `_local` one has no
            // attachments to take.
            Route([.POST], "/{db}/_local/{local}", .member) { c in
                guard c.request.contentType == "multipart/form-data" else {
                    throw CouchError.badContentType("Content-Type must be multipart/form-data")
                }
                try Self.refuseLocalAttachment()
            },
            Route(HTTPMethod.allCases, "/{db}/_local/{local}/{path…}", .member) { _ in
                try Self.refuseLocalAttachment()
            },
            // MARK: Design documents
            Route(read, "/{db}/_design/{design}", .usersDesignRead, onlyIn: App.usersDatabase, get),
            Route([.DELETE], "/{db}/_design/{design}", .databaseAdmin, delete),
            Route(read, "/{db}/_design/{design}", .member, get),
            Route([.POST], "/{db}/_design/{design}", .databaseAdmin, body: .attachment, postForm),
            Route([.PUT], "/{db}/_design/{design}", .databaseAdmin, body: .document, put),
            Route([.COPY], "/{db}/_design/{design}", .databaseAdmin, copy),
            // MARK: Documents
            Route(read, "/{db}/{doc}", .usersOwnDocument, onlyIn: App.usersDatabase, get),
            Route([.DELETE], "/{db}/{doc}", .member, delete),
            Route(read, "/{db}/{doc}", .member, get),
            Route([.POST], "/{db}/{doc}", .member, body: .attachment, postForm),
            Route([.PUT], "/{db}/{doc}", .member, drop: .upload, body: .document, put),
            Route([.COPY], "/{db}/{doc}", .member, copy),
        ]
    }
}
