import CouchWire
import RevTree

/// Standalone attachments: `GET/HEAD/PUT/DELETE /db/doc/att`, and the HTML form upload
/// `POST /db/doc` (`multipart/form-data`).
extension App {
    func attachment(_ database: Database, _ docID: String, _ name: String, _ request: Request, _ reply: Reply) throws {
        try DocumentID.validate(docID)
        switch request.method {
        case "GET", "HEAD": try getAttachment(database, docID, name, request, reply)
        case "PUT": try putAttachment(database, docID, name, request, reply)
        case "DELETE": try deleteAttachment(database, docID, name, request, reply)
        default: throw CouchError.methodNotAllowed("DELETE,GET,HEAD,PUT")
        }
    }

    private func getAttachment(
        _ database: Database, _ docID: String, _ name: String, _ request: Request, _ reply: Reply
    ) throws {
        let revision = try readableRevision(database, docID, rev: request.query["rev"])
        guard let att = revision.attachments.first(where: { $0.name.utf8Equals(name) }) else {
            throw CouchError.notFound("Document is missing attachment")
        }
        let etag = "\"\(att.digest.split(separator: "-", maxSplits: 1).last.map(String.init) ?? att.digest)\""
        var headers = HTTPHeaders()
        headers.set("Content-Type", att.contentType)
        headers.set("ETag", etag)
        headers.set("Accept-Ranges", att.encoding == nil ? "bytes" : "none")
        headers.set("Cache-Control", "must-revalidate")
        App.sandboxAttachmentHeaders(&headers)
        if request.head.headers["If-None-Match"] == etag {
            return try reply.bytes(304, [], headers: headers)
        }
        let reader = try blobs(for: database).openReader(att.blobKey)
        defer { reader.close() }
        if let encoding = att.encoding {
            // Stored compressed: send as stored when the client takes it, else decode on the fly.
            if request.head.headers["Accept-Encoding"]?.lowercased().contains(encoding) == true {
                headers.set("Content-Encoding", encoding)
                try reply.begin(200, headers: headers, contentLength: reader.length)
                try stream(reader, from: 0, count: reader.length, to: reply)
                return try reply.finish()
            }
            // Decoded in 64 KiB steps straight into the response: a gzip bomb costs one step buffer.
            try reply.begin(200, headers: headers, contentLength: att.length)
            try streamIdentityBytes(database, att) { piece in try reply.write(piece) }
            return try reply.finish()
        }
        switch ByteRange.parse(request.head.headers["Range"], length: reader.length) {
        case .whole:
            break
        case .unsatisfiable:
            return reply.error(.rangeNotSatisfiable)
        case .bytes(let start, let end):
            headers.set("Content-Range", "bytes \(start)-\(end)/\(reader.length)")
            try reply.begin(206, headers: headers, contentLength: end - start + 1)
            try stream(reader, from: start, count: end - start + 1, to: reply)
            return try reply.finish()
        }
        try reply.begin(200, headers: headers, contentLength: reader.length)
        try stream(reader, from: 0, count: reader.length, to: reply)
        try reply.finish()
    }

    /// Any writer may store an attachment as `text/html`, SVG or with no type, and it is served from the
    /// server's own origin, where cookie sessions live: a stored page must not run script there.
    /// `Content-Security-Policy: sandbox` (CouchDB 3.4's default `[csp] attachments_header_value`) makes
    /// the browser treat the response as a sandboxed, opaque-origin document (no script, no cookies, no
    /// same-origin requests), and `nosniff` stops it from guessing a script or page out of other types.
    static func sandboxAttachmentHeaders(_ headers: inout HTTPHeaders) {
        headers.set("Content-Security-Policy", "sandbox")
        headers.set("X-Content-Type-Options", "nosniff")
    }

    /// Copies `count` bytes of a blob into the response in bounded pieces.
    func stream(_ reader: BlobReader, from start: Int, count: Int, to reply: Reply) throws {
        var offset = start
        let end = start + count
        while offset < end {
            let chunk = try reader.read(at: offset, upTo: min(App.streamChunk, end - offset))
            if chunk.isEmpty { throw CouchError.unknownError("attachment data is shorter than recorded") }
            offset += chunk.count
            try reply.write(chunk)
        }
    }

    /// The revision `rev` names, or the live winner.
    private func readableRevision(_ database: Database, _ docID: String, rev: String?) throws -> StoredRevision {
        if let rev {
            guard let revision = try database.revision(docID, rev: try DocumentInput.parseRev(rev)),
                revision.body != nil
            else {
                throw CouchError.notFound("missing")
            }
            return revision
        }
        guard let info = try database.document(docID) else { throw CouchError.notFound("missing") }
        guard !info.deleted, let revision = try database.revision(docID, rev: nil) else {
            throw CouchError.notFound("deleted")
        }
        return revision
    }

    private func putAttachment(
        _ database: Database, _ docID: String, _ name: String, _ request: Request, _ reply: Reply
    ) throws {
        try App.validateAttachmentName(name)
        let base =
            try request.query["rev"].map { (text: String) throws(CouchError) -> RevID in
                try DocumentInput.parseRev(text)
            }
            ?? request.head.headers["If-Match"].map { (text: String) throws(CouchError) -> RevID in
                try DocumentInput.parseRev(text.trimmingCharacters(in: "\""))
            }
        // CouchDB stores gzip bodies as sent (served back encoded or decoded on the fly) and refuses
        // any other coding; it does not check `Content-MD5` on this route.
        let encoding: String?
        switch request.head.headers["Content-Encoding"]?.lowercased().trimmingCharacters(in: " ") {
        case nil, "identity": encoding = nil
        case "gzip": encoding = "gzip"
        default: throw CouchError.badContentType("Only gzip and identity content-encodings are supported")
        }
        // Stream the bytes to a blob first; the revision is written only once they are safe on disk.
        let writer = try makeBlobWriter(database)
        do {
            try request.streamBody(
                limit: Limits.attachmentRequestBytes,
                tooLarge: "Attachment is larger than \(Limits.attachmentRequestBytes) bytes"
            ) { chunk in try writer.write(chunk) }
        } catch {
            writer.abort()
            throw error
        }
        let stored = try commitBlob(writer)
        let identityLength = try encoding == nil ? stored.length : gzipIdentityLength(database, key: stored.key)
        let contentType = request.head.headers["Content-Type"] ?? "application/octet-stream"
        let newAttachment = AttachmentInfo(
            name: name, contentType: contentType, digest: "md5-" + App.base64(stored.md5), length: identityLength,
            revpos: (base?.pos ?? 0) + 1, encoding: encoding, encodedLength: encoding == nil ? nil : stored.length,
            blobKey: stored.key)
        let rev = try rewriteAttachments(database, docID, base: base, user: request.user) { atts in
            atts.removeAll { $0.name.utf8Equals(name) }
            atts.append(newAttachment)
        }
        var headers = HTTPHeaders()
        headers.set("ETag", "\"\(rev)\"")
        let location = [request.segments[0], docID, name].map(PercentEncoding.segment).joined(separator: "/")
        headers.set("Location", "/" + location)
        try reply.json(201, ["ok": true, "id": .string(docID), "rev": .string(rev.description)], headers: headers)
    }

    /// The decoded size of a gzip blob, found by decoding it in 64 KiB steps that are counted and dropped
    /// (CouchDB records the encoded size for both when it cannot tell; we can, and `length` must be the
    /// identity size). Decoding stops as soon as it passes `Limits.gzipIdentityBytes`.
    /// - Throws: 413 when the attachment would expand past that limit, 400 when it is not valid gzip.
    private func gzipIdentityLength(_ database: Database, key: String) throws -> Int {
        let reader = try blobs(for: database).openReader(key)
        defer { reader.close() }
        let decoder = try GzipDecoder(limit: Limits.gzipIdentityBytes)
        var offset = 0
        do {
            while offset < reader.length {
                let chunk = try reader.read(at: offset, upTo: App.streamChunk)
                if chunk.isEmpty { break }
                offset += chunk.count
                try chunk.withUnsafeBytes { try decoder.decode($0) { _ in } }
            }
            try decoder.finish()
        } catch GzipError.limitExceeded {
            throw CouchError.tooLarge("Attachment expands beyond \(Limits.gzipIdentityBytes) bytes")
        } catch is GzipError {
            throw CouchError.badRequest("Attachment body is not valid gzip")
        }
        return decoder.totalOut
    }

    private func deleteAttachment(
        _ database: Database, _ docID: String, _ name: String, _ request: Request, _ reply: Reply
    ) throws {
        guard let revText = request.query["rev"] ?? request.head.headers["If-Match"]?.trimmingCharacters(in: "\"")
        else {
            throw CouchError.conflict
        }
        let base = try DocumentInput.parseRev(revText)
        let rev = try rewriteAttachments(database, docID, base: base, user: request.user) { atts throws(CouchError) in
            guard atts.contains(where: { $0.name.utf8Equals(name) }) else {
                throw CouchError.notFound("Document is missing attachment")
            }
            atts.removeAll { $0.name.utf8Equals(name) }
        }
        try reply.json(200, ["ok": true, "id": .string(docID), "rev": .string(rev.description)])
    }

    /// Writes a new revision on `base` with the same body and edited attachments.
    func rewriteAttachments(
        _ database: Database, _ docID: String, base: RevID?, user: UserContext,
        edit: (inout [AttachmentInfo]) throws(CouchError) -> Void
    ) throws -> RevID {
        var body: [UInt8] = Array("{}".utf8)
        var atts: [AttachmentInfo] = []
        if let base {
            guard let revision = try database.revision(docID, rev: base) else {
                // CouchDB: a rev that is not a leaf (or unknown) on an attachment update is a conflict.
                throw CouchError.conflict
            }
            body = revision.body ?? body
            atts = revision.attachments
        } else if let info = try database.document(docID), !info.deleted {
            throw CouchError.conflict
        }
        let kept = atts
        try edit(&atts)
        // Unchanged attachments go as stubs so that they keep their revpos (new ones get the new one).
        let refs: [AttachmentRef] = atts.map { att in
            kept.contains(att) ? .stub(name: att.name, revpos: att.revpos, digest: att.digest) : .stored(att)
        }
        let write = RevisionWrite(
            docID: docID, path: base.map { [$0] } ?? [], deleted: false, body: body, attachments: refs)
        guard let outcome = try applyValidatedEdits(database, [write], user: user).first else {
            throw CouchError.unknownError("store returned no result")
        }
        switch outcome.result {
        case .success(let rev): return rev
        case .failure(let error): throw CouchError(error)
        }
    }
}

/// A `Range: bytes=…` request, read as `chttpd_db:parse_ranges` does.
enum ByteRange: Equatable {
    /// Send the whole attachment with 200: no header, a malformed one, several ranges (CouchDB
    /// answers those with `multipart/byteranges`; we send everything), or `bytes=0-`.
    case whole
    /// A first byte past the end, or a last byte before the first: 416.
    case unsatisfiable
    /// Inclusive first and last byte: 206.
    case bytes(Int, Int)

    static func parse(_ header: String?, length: Int) -> ByteRange {
        guard let header, header.hasPrefix("bytes=") else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingPrefix(" ")
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let firstText = spec[..<dash]
        let lastText = spec[spec.index(after: dash)...].trimmingPrefix(" ")
        if firstText.isEmpty {
            guard let suffix = Int(lastText), suffix > 0 else { return .whole }
            return length == 0 ? .unsatisfiable : .bytes(max(length - suffix, 0), length - 1)
        }
        guard let first = Int(firstText), first >= 0 else { return .whole }
        if lastText.isEmpty {
            if first == 0 { return .whole }
            return first <= length - 1 ? .bytes(first, length - 1) : .unsatisfiable
        }
        guard let last = Int(lastText) else { return .whole }
        let clamped = min(last, length - 1)
        return clamped < first ? .unsatisfiable : .bytes(first, clamped)
    }
}
