import CouchCrypto
import CouchServer
import CouchStore
import CouchWire
import Foundation
import RevTree

/// The resumable upload protocol over `/_photos/api/db/{db}/uploads` (`ResumableUploads` keeps the state):
///
/// - `POST …/uploads?name=N&type=T&modified=MS&length=L&sha256=HEX` starts an upload: 201 `{"id","offset":0}`,
///   or 200 with `"resumed": true` and the offset to continue at when the same user already started these bytes
///   (the person picked the same file again).
/// - `HEAD`/`GET …/uploads/{id}`: `Upload-Offset` (and `{"offset","length"}`), the bytes the server has.
/// - `PUT …/uploads/{id}` with `Upload-Offset: N` and bytes: appends them; every byte that arrives is kept, also
///   when the connection is cut. 409 with the server's `offset` when N is not it. The append that brings the
///   upload to its length verifies the SHA-256 and makes the photo (201 `{"id","rev"}`, or 200 `"existing"`);
///   before that nothing is visible as a photo.
/// - `DELETE …/uploads/{id}`: gives up on it.
///
/// `couchlite push` adds `rev=R&fields=JSON` to the creation: the completed file then becomes revision R of the
/// photo's document with those fields, written as a replicator writes (`new_edits=false`), so the replication that
/// follows finds the revision there. `GET /` announces the protocol (`vendor.resumable_uploads`).
///
/// Another user's id, an expired one and a malformed one are all the same 404.
extension GalleryHandlers {
    /// `POST …/uploads`.
    func createUpload(_ c: RequestContext) throws -> Response {
        let database = try galleryDatabase(c)
        let query = c.request.query
        guard let name = query["name"], !name.isEmpty else {
            throw CouchError.badRequest("upload needs a name parameter")
        }
        try DocumentWriter.validateAttachmentName(name)
        guard let length = try query.int("length") ?? Int(c.request.head.headers["Upload-Length"] ?? "") else {
            throw CouchError.badRequest("upload needs its length (length parameter or Upload-Length header)")
        }
        let created = try state.uploads.create(
            owner: ResumableUploads.owner(of: c.user, from: c.request.head.remoteAddress), database: database.name,
            name: name,
            contentType: query["type"].flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream",
            modified: try query.int("modified") ?? Int(Date().timeIntervalSince1970 * 1000), length: length,
            sha256: query["sha256"] ?? "", revision: try Self.revision(query))
        if let drop = c.user.drop, created.upload.length - created.offset > drop.maxBytes - drop.bytes.charged {
            // `receive --max-size`: a file that cannot fit is refused before a byte of it is sent.
            if !created.resumed { state.uploads.remove(created.upload.id) }
            throw CouchError.insufficientStorage
        }
        return answer(
            created.resumed ? .ok : .created, created.upload, offset: created.offset, resumed: created.resumed)
    }

    /// `HEAD`/`GET …/uploads/{id}`.
    func uploadStatus(_ c: RequestContext) throws -> Response {
        let (upload, offset) = try ownUpload(c)
        return answer(.ok, upload, offset: offset, resumed: nil)
    }

    /// `PUT …/uploads/{id}` with `Upload-Offset`.
    func appendUpload(_ c: RequestContext) throws -> Response {
        let database = try galleryDatabase(c)
        let (upload, _) = try ownUpload(c)
        guard let offset = Int(c.request.head.headers["Upload-Offset"] ?? ""), offset >= 0 else {
            throw CouchError.badRequest("an append needs Upload-Offset, the byte it starts at")
        }
        do {
            return try state.uploads.exclusively(upload.id) {
                let reached = try state.uploads.append(
                    upload, at: offset, declared: Int(c.request.head.headers["Content-Length"] ?? "")
                ) {
                    consume in try c.request.streamBody(limit: Int.max, tooLarge: "", consume)
                }
                guard reached == upload.length else {
                    return answer(.ok, upload, offset: reached, resumed: nil)
                }
                return try complete(upload, in: database, c)
            }
        } catch let mismatch as ResumableUploads.OffsetMismatch {
            return refuse(
                upload, offset: mismatch.offset, "The upload has \(mismatch.offset) bytes: continue there")
        } catch is ResumableUploads.Busy {
            return refuse(
                upload, offset: state.uploads.offset(of: upload.id),
                "Another append to this upload is in progress: ask for its offset and retry")
        }
    }

    /// `DELETE …/uploads/{id}`.
    func cancelUpload(_ c: RequestContext) throws -> Response {
        let (upload, _) = try ownUpload(c)
        try state.uploads.exclusively(upload.id) { state.uploads.remove(upload.id) }
        return .json(.ok, ["ok": true])
    }

    /// The revision a push names (`rev` and `fields`, both or neither): a valid rev and an object of fields none of
    /// which is special (`_attachments`, `_deleted`: the file is the one attachment, the revision a live one).
    private static func revision(_ query: QueryParameters) throws -> (rev: String, fields: JSONObject)? {
        guard let rev = query["rev"] else {
            guard query["fields"] == nil else { throw CouchError.badRequest("fields needs a rev") }
            return nil
        }
        _ = try DocumentInput.parseRev(rev)
        guard let text = query["fields"], let fields = (try? JSON.parse(Array(text.utf8)))?.objectValue else {
            throw CouchError.badRequest("rev needs fields, the document's fields as a JSON object")
        }
        guard !fields.keys.contains(where: { $0.hasBytePrefix("_") }) else {
            throw CouchError.docValidation("The fields of an uploaded photo cannot include special (_) fields")
        }
        return (rev, fields)
    }

    /// Copies the verified file into the blob store and makes its document; the partial file goes either way once
    /// its digest has been checked (a wrong one is removed by `finish`).
    private func complete(_ upload: PartialUpload, in database: Database, _ c: RequestContext) throws -> Response {
        let writer = try blobs.makeWriter(database)
        var head = ContentSniffer.Prefix()
        do {
            try state.uploads.finish(upload) { chunk in
                head.take(chunk)
                try writer.write(chunk)
            }
        } catch {
            writer.abort()
            throw error
        }
        // A photo or video by its bytes, whatever its name and type say; anything else is refused with its name.
        guard let kind = ContentSniffer.sniff(head.bytes) else {
            writer.abort()
            state.uploads.remove(upload.id)
            throw CouchError.badContentType(ContentSniffer.notMedia(upload.name))
        }
        let stored = try blobs.commit(writer)
        let file = PhotoFile(
            name: upload.name, contentType: Self.mediaType(claimed: upload.contentType, kind),
            modified: Date(timeIntervalSince1970: Double(upload.modified) / 1000))
        let id = PhotoDocument.id(sha256Hex: upload.sha256)
        let (status, answer) =
            try upload.revision.map { try storeRevision(database, $0, file, stored: stored, id: id, user: c.user) }
            ?? storePhoto(database, file, stored: stored, id: id, user: c.user)
        state.uploads.remove(upload.id)
        return .json(status, answer)
    }

    /// Writes the pushed revision with the file as its one attachment, as `PUT ?new_edits=false` would.
    private func storeRevision(
        _ database: Database, _ revision: (rev: String, fields: JSONObject), _ file: PhotoFile,
        stored: (key: String, md5: [UInt8], sha1: [UInt8]?, length: Int), id: String, user: UserContext
    ) throws -> (Response.Status, JSON) {
        let rev = try DocumentInput.parseRev(revision.rev)
        let att = AttachmentInfo(
            name: file.name, contentType: file.contentType, digest: "md5-" + DocumentWriter.base64(stored.md5),
            length: stored.length, revpos: rev.pos, encoding: nil, encodedLength: nil, blobKey: stored.key)
        let write = RevisionWrite(
            docID: id, path: [rev], deleted: false, body: JSON.object(revision.fields).serialized(),
            attachments: [.stored(att)])
        let outcome = try documents.applyReplicated(database, write, user: user)
        if case .failure(let error) = outcome.result { throw CouchError(error) }
        return (.created, ["ok": true, "id": .string(id), "rev": .string(revision.rev)])
    }

    private func ownUpload(_ c: RequestContext) throws -> (PartialUpload, Int) {
        let database = try galleryDatabase(c)
        return try state.uploads.lookup(
            c.parameter("id"), owner: ResumableUploads.owner(of: c.user, from: c.request.head.remoteAddress),
            database: database.name)
    }

    private func answer(_ status: Response.Status, _ upload: PartialUpload, offset: Int, resumed: Bool?) -> Response {
        var body = JSONObject([
            ("ok", true), ("id", .string(upload.id)), ("offset", .int(offset)), ("length", .int(upload.length)),
        ])
        if let resumed { body["resumed"] = .bool(resumed) }
        return .json(status, .object(body), headers: offsetHeaders(offset, upload))
    }

    private func refuse(_ upload: PartialUpload, offset: Int, _ reason: String) -> Response {
        let body: JSON = ["error": "conflict", "reason": .string(reason), "offset": .int(offset)]
        return .json(.conflict, body, headers: offsetHeaders(offset, upload))
    }

    private func offsetHeaders(_ offset: Int, _ upload: PartialUpload) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.set("Upload-Offset", String(offset))
        headers.set("Upload-Length", String(upload.length))
        headers.set("Cache-Control", "no-store")
        return headers
    }
}
