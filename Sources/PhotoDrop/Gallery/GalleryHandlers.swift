import CouchCrypto
import CouchServer
import CouchStore
import CouchWire
import Foundation
import MediaDecoding
import RevTree
import Thumbnails

/// The photo gallery under `/_photos/`: its page and assets (GalleryAssets.swift), and a small JSON
/// API over the user's databases (listing newest first, thumbnails, downloads, upload, delete).
/// Everything else the page needs is CouchDB's own API (`/_session`, attachments with Range,
/// `_changes` longpoll). Who may read or write what is the databases' `_security`, as for the API.
struct GalleryHandlers: Sendable {
    let store: Store
    let security: SecurityStore
    let documents: DocumentWriter
    let blobs: BlobRegistry
    let state: GalleryState
    /// The server's id, in the welcome of `GET /`.
    let serverUUID: String
    /// Which `Origin`s are this server's (`GalleryGuard.requireSameOrigin`).
    let hosts: HostPolicy

    /// `GET /_photos/{asset}` (and `/_photos` for its page).
    func asset(_ c: RequestContext) throws -> Response {
        return try galleryAsset(c.parameters["asset"] ?? "index.html", c.request)
    }

    /// `GET /_photos/api/dbs`.
    func databases(_ c: RequestContext) throws -> Response { try galleryDatabases(c.request) }

    /// `GET /_photos/api/db/{db}/photos`.
    func photos(_ c: RequestContext) throws -> Response { try galleryPhotos(galleryDatabase(c), c.request) }

    /// `POST /_photos/api/db/{db}/upload`.
    func upload(_ c: RequestContext) throws -> Response { try galleryUpload(galleryDatabase(c), c.request) }

    /// `GET /_photos/api/db/{db}/photo/{doc}`.
    func photo(_ c: RequestContext) throws -> Response {
        return try galleryPhoto(galleryDatabase(c), c.parameter("doc"), c.request)
    }

    /// `DELETE /_photos/api/db/{db}/doc/{id}`.
    func delete(_ c: RequestContext) throws -> Response {
        return try galleryDelete(galleryDatabase(c), c.parameter("id"), c.request)
    }

    /// `GET /_photos/api/db/{db}/thumb/{id}/{att…}`.
    func thumbnail(_ c: RequestContext) throws -> Response {
        return try galleryThumbnail(galleryDatabase(c), c.parameter("id"), c.parameter("path"), c.request)
    }

    /// `GET /_photos/api/db/{db}/preview/{id}/{att…}`.
    func preview(_ c: RequestContext) throws -> Response {
        return try galleryPreview(galleryDatabase(c), c.parameter("id"), c.parameter("path"), c.request)
    }

    /// `GET /_photos/api/db/{db}/download/{id}/{att…}`.
    func download(_ c: RequestContext) throws -> Response {
        return try galleryDownload(galleryDatabase(c), c.parameter("id"), c.parameter("path"), c.request)
    }
}

extension GalleryHandlers {
    /// `GET /` from a browser (`Accept: text/html`): a page linking to the gallery. JSON clients get
    /// the welcome object unchanged.
    static func prefersHTML(_ request: Request) -> Bool {
        guard request.verb == .GET || request.verb == .HEAD, let accept = request.head.headers["Accept"] else {
            return false
        }
        return accept.lowercased().split(separator: ",").contains {
            $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) == "text/html"
        }
    }

    /// The version of the resumable upload protocol `GET /` announces (`vendor.resumable_uploads`), for
    /// `couchlite push`; a CouchDB has no such field and gets the plain replication protocol.
    static let resumableUploadsVersion = 1

    /// CouchDB's welcome, with the resumable uploads announced in `vendor`, the object CouchDB leaves to vendors.
    static func welcome(serverUUID: String) -> JSON {
        guard case .object(var welcome) = ServerHandlers.welcome(serverUUID: serverUUID),
            case .object(var vendor)? = welcome["vendor"]
        else { return ServerHandlers.welcome(serverUUID: serverUUID) }
        vendor["resumable_uploads"] = .int(resumableUploadsVersion)
        welcome["vendor"] = .object(vendor)
        return .object(welcome)
    }

    static func welcomePage() -> Response {
        var headers = GalleryGuard.pageHeaders(contentType: "text/html; charset=utf-8")
        headers.set("Vary", "Accept")
        return .bytes(.ok, GalleryAssets.welcome, headers: headers)
    }

    private func galleryAsset(_ name: String, _ request: Request) throws -> Response {
        guard let asset = GalleryAssets.files[name] else { throw CouchError.notFound("missing") }
        return .bytes(.ok, asset.bytes, headers: GalleryGuard.pageHeaders(contentType: asset.contentType))
    }

    /// The album a `{db}` row names, its row having authorized the caller (a member, or the drop credentials of
    /// their own database): a system database is no album (404).
    func galleryDatabase(_ c: RequestContext) throws -> Database {
        let database = try c.database()
        guard !database.name.hasBytePrefix("_") else { throw CouchError.notFound("missing") }
        return database
    }

    /// `GET /_photos/api/dbs`: the databases the user may read (a server admin: all of them). A temporary
    /// account reads none, and gets the one it may drop photos into as `drop`.
    private func galleryDatabases(_ request: Request) throws -> Response {
        let user = request.user
        if let scope = user.scope {
            return .json(.ok, ["user": user.json, "databases": [], "drop": .string(scope)])
        }
        let all = store.databaseNames()
        let names = all.filter { name in
            !name.hasBytePrefix("_") && security.security(of: name).isMember(user)
        }.sorted()
        state.albums.keep(only: Set(all))
        var budget = AlbumSummaries.defaultBudget
        var albums: [JSON] = []
        for name in names {
            // Deleted since it was listed: it is simply not shown.
            guard let database = try? store.open(name) else { continue }
            albums.append(
                try state.albums.summary(of: database, generation: store.deletions(of: name), budget: &budget))
        }
        return .json(
            .ok, ["user": user.json, "databases": .array(names.map(JSON.string)), "albums": .array(albums)])
    }

    /// `GET …/photo/DOC`: one document as the grid shows it (404 once deleted).
    private func galleryPhoto(_ database: Database, _ docID: String, _ request: Request) throws -> Response {
        guard let info = try database.document(docID), !info.deleted,
            let item = try galleryItem(
                database, docID, seq: info.seq, admin: security.security(of: database.name).isAdmin(request.user))
        else { throw CouchError.notFound("missing") }
        return .json(.ok, item)
    }

    private func galleryAttachment(_ database: Database, _ docID: String, _ name: String) throws -> AttachmentInfo {
        guard let revision = try database.revision(docID, rev: nil), !revision.deleted,
            let att = revision.attachments.first(where: { $0.name == name })
        else { throw CouchError.notFound("missing") }
        return att
    }

    /// `GET …/thumb/DOC/ATT?size=N`: a JPEG made by the media sandbox (cached by digest and size) of a photo
    /// (JPEG, PNG, HEIC, AVIF) or a video's poster frame, or a placeholder image for a file it cannot read.
    private func galleryThumbnail(
        _ database: Database, _ docID: String, _ name: String, _ request: Request
    ) throws -> Response {
        let size = GalleryState.thumbnailSize(try request.query.int("size"))
        return try serveRendered(database, docID, name, request, cache: state.thumbnails, size: size)
    }

    /// `GET …/preview/DOC/ATT`: the viewer's full-size JPEG of a photo browsers cannot show (HEIC, AVIF) or of a
    /// video's poster, made once and cached; Download still gives the original bytes.
    private func galleryPreview(
        _ database: Database, _ docID: String, _ name: String, _ request: Request
    ) throws -> Response {
        return try serveRendered(database, docID, name, request, cache: state.previews, size: GalleryState.previewSide)
    }

    private func serveRendered(
        _ database: Database, _ docID: String, _ name: String, _ request: Request,
        cache: ThumbnailCache, size: Int
    ) throws -> Response {
        let att = try galleryAttachment(database, docID, name)
        let etag = "\"\(att.blobKey)-\(size)\""
        var headers = HTTPHeaders()
        headers.set("ETag", etag)
        headers.set("Cache-Control", "private, max-age=86400")
        headers.set("X-Content-Type-Options", "nosniff")
        if request.head.headers["If-None-Match"] == etag { return .bytes(.notModified, [], headers: headers) }
        // The sandbox goes by the file's first bytes, not the sender's content type; a compressed attachment is
        // not a file the decoders read.
        let outcome =
            att.encoding == nil
            ? try cache.thumbnail(key: att.blobKey, size: size) { try blobPath(database, att.blobKey) } : .placeholder
        switch outcome {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CouchError.unknownError("thumbnail vanished")
            }
            headers.set("Content-Type", "image/jpeg")
            return .bytes(.ok, [UInt8](data), headers: headers)
        case .placeholder:
            headers.set("Content-Type", "image/svg+xml")
            return .bytes(.ok, GalleryAssets.placeholder, headers: headers)
        }
    }

    /// `GET …/download/DOC/ATT`: the attachment as a download under its own name, whatever it is.
    private func galleryDownload(
        _ database: Database, _ docID: String, _ name: String, _ request: Request
    ) throws -> Response {
        let att = try galleryAttachment(database, docID, name)
        let reader = try blobs.store(for: database).openReader(att.blobKey)
        var headers = HTTPHeaders()
        headers.set("Content-Type", att.contentType)
        headers.set("Content-Disposition", ContentDisposition.attachment(name))
        headers.set("Content-Security-Policy", "sandbox")
        headers.set("X-Content-Type-Options", "nosniff")
        if let encoding = att.encoding { headers.set("Content-Encoding", encoding) }
        return .stream(.ok, headers: headers, contentLength: reader.length) { out in
            defer { reader.close() }
            try out.stream(reader, from: 0, count: reader.length)
        }
    }

    /// `POST …/upload?name=N&type=T&modified=MS` with the file's bytes as the body: streamed into the
    /// blob store while hashed (no size limit but the disk), its `taken` the camera's date (EXIF, QuickTime)
    /// or else `modified`, then one document per file with the
    /// id `couchlite push` gives it. A file already there (same bytes) is not stored again: 200 with
    /// `"existing": true`; a new one is 201.
    private func galleryUpload(_ database: Database, _ request: Request) throws -> Response {
        guard let name = request.query["name"], !name.isEmpty else {
            throw CouchError.badRequest("upload needs a name parameter")
        }
        try DocumentWriter.validateAttachmentName(name)
        let contentType =
            request.query["type"].flatMap { $0.isEmpty ? nil : $0 } ?? request.head.headers["Content-Type"]
            ?? "application/octet-stream"
        let modified =
            try request.query.int("modified").map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? Date()
        let sha256 = Digest(.sha256)
        let upload = try blobs.makeWriter(database)
        var head = ContentSniffer.Prefix()
        do {
            try request.streamBody(limit: Int.max, tooLarge: "") { chunk in
                sha256.update(chunk)
                head.take(chunk)
                try upload.write(chunk)
            }
        } catch {
            upload.abort()
            throw error
        }
        // A photo or video by its bytes, whatever its name and type say; anything else is refused with its name.
        guard let kind = ContentSniffer.sniff(head.bytes) else {
            upload.abort()
            throw CouchError.badContentType(ContentSniffer.notMedia(name))
        }
        let stored = try blobs.commit(upload)
        let (status, answer) = try storePhoto(
            database,
            PhotoFile(name: name, contentType: Self.mediaType(claimed: contentType, kind), modified: modified),
            stored: stored, id: PhotoDocument.id(sha256: sha256.finalize()), user: request.user)
        return .json(status, answer)
    }

    /// The content type to store: the one claimed when it names the format the bytes are (`image/x-adobe-dng` for a
    /// TIFF), else the format's own.
    static func mediaType(claimed: String, _ kind: ContentSniffer.Kind) -> String {
        let bare = claimed.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let bare, let family = bare.split(separator: "/").first, !bare.isEmpty else { return kind.mediaType }
        let sameFamily = kind.mediaType.hasPrefix(family + "/")
        return sameFamily && ContentSniffer.Kind.all.allSatisfy({ $0.mediaType != bare || $0 == kind })
            ? bare : kind.mediaType
    }

    /// A photo's file as its uploader described it.
    struct PhotoFile {
        let name: String
        let contentType: String
        let modified: Date
    }

    /// Makes the document of a file committed to the blob store, with the id `couchlite push` gives it. A file
    /// already there (same bytes) is not stored again: 200 with `"existing": true`; a new one is 201.
    func storePhoto(
        _ database: Database, _ file: PhotoFile, stored: (key: String, md5: [UInt8], sha1: [UInt8]?, length: Int),
        id: String, user: UserContext
    ) throws -> (Response.Status, JSON) {
        // The camera's date when the file has one (read now, in the sandbox, and kept for the listing).
        let probed = try? state.catalog.info(key: stored.key) { try blobPath(database, stored.key) }
        let taken = probed?.takenISO ?? ISO8601DateFormatter().string(from: file.modified)
        let existing = try database.document(id)
        if let existing, !existing.deleted {
            return (
                .ok, ["ok": true, "id": .string(id), "rev": .string(existing.winner.description), "existing": true]
            )
        }
        let base = existing?.winner
        let att = AttachmentInfo(
            name: file.name, contentType: file.contentType, digest: "md5-" + DocumentWriter.base64(stored.md5),
            length: stored.length,
            revpos: (base?.pos ?? 0) + 1, encoding: nil, encodedLength: nil, blobKey: stored.key)
        let write = RevisionWrite(
            // No base rev, as a PUT without one: the store puts it on top of a deleted winner.
            docID: id, path: [], deleted: false,
            body: JSON.object(PhotoDocument.fields(name: file.name, taken: taken, size: stored.length)).serialized(),
            attachments: [.stored(att)])
        let outcome = try documents.applyEdit(database, write, user: user)
        switch outcome.result {
        case .success(let rev):
            return (.created, ["ok": true, "id": .string(id), "rev": .string(rev.description)])
        case .failure(let error):
            // The same file uploaded at the same moment by someone else: stored once, theirs won.
            if let info = try database.document(id), !info.deleted {
                return (
                    .ok, ["ok": true, "id": .string(id), "rev": .string(info.winner.description), "existing": true]
                )
            }
            throw CouchError(error)
        }
    }

    /// `DELETE …/doc/DOC?rev=R`: deletes that revision (409 when it is not the current one).
    private func galleryDelete(_ database: Database, _ docID: String, _ request: Request) throws -> Response {
        guard let revText = request.query["rev"] else { throw CouchError.conflict }
        try DocumentID.validate(docID)
        var input = try DocumentInput(.object(JSONObject()))
        input.deleted = true
        let rev = try documents.writeOne(
            database, docID: docID, input: input, base: try DocumentInput.parseRev(revText), newEdits: true,
            followed: nil, user: request.user)
        return .json(.ok, ["ok": true, "id": .string(docID), "rev": .string(rev.description)])
    }
}
