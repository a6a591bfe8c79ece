import CouchCrypto
import CouchStore
import CouchWire
import RevTree

/// Standalone attachments: `GET/HEAD/PUT/DELETE /db/doc/att`, and the HTML form upload
/// `POST /db/doc` (`multipart/form-data`).
struct AttachmentHandlers: Sendable {
    let documents: DocumentWriter
    let blobs: BlobRegistry

    /// `GET /db/doc/att` (with `Range`, and gzip-stored bytes sent as stored or decoded).
    func get(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let (database, name, request) = (try c.database(), try c.parameter("path"), c.request)
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
        headers.sandboxAttachment()
        if request.ifNoneMatch(etag) {
            return .bytes(.notModified, [], headers: headers)
        }
        let reader = try blobs.store(for: database).openReader(att.blobKey)
        var status = Response.Status.ok
        var range = 0..<reader.length
        if let encoding = att.encoding {
            // Stored compressed: send as stored when the client takes it, else decode on the fly.
            if request.head.headers["Accept-Encoding"]?.lowercased().contains(encoding) == true {
                headers.set("Content-Encoding", encoding)
            } else {
                // Decoded in 64 KiB steps straight into the response: a gzip bomb costs one step buffer.
                reader.close()
                return .stream(.ok, headers: headers, contentLength: att.length) { out in
                    try blobs.streamIdentityBytes(database, att) { piece in try out.write(piece) }
                }
            }
        } else {
            switch ByteRange.parse(request.head.headers["Range"], length: reader.length) {
            case .whole:
                break
            case .unsatisfiable:
                reader.close()
                throw CouchError.rangeNotSatisfiable
            case .bytes(let start, let end):
                headers.set("Content-Range", "bytes \(start)-\(end)/\(reader.length)")
                status = .partialContent
                range = start..<(end + 1)
            case .several(let ranges):
                return Self.byteranges(ranges, of: reader, contentType: att.contentType)
            }
        }
        return .stream(status, headers: headers, contentLength: range.count) { out in
            defer { reader.close() }
            try out.stream(reader, from: range.lowerBound, count: range.count)
        }
    }
}

extension AttachmentHandlers {
    /// 206 `multipart/byteranges` with each of `ranges` in its own part, in the order asked, as
    /// `chttpd_db:send_ranges_multipart` frames them (chunked; the parts carry the type and range; no ETag).
    static func byteranges(_ ranges: [ClosedRange<Int>], of reader: BlobReader, contentType: String) -> Response {
        let boundary = Secrets.randomBytes(16).hexString
        var headers = HTTPHeaders()
        headers.set("Content-Type", "multipart/byteranges; boundary=\"\(boundary)\"")
        headers.sandboxAttachment()
        return .stream(.partialContent, headers: headers) { out in
            defer { reader.close() }
            if out.isHEAD { return }
            try out.write(Array("--\(boundary)".utf8))
            for range in ranges {
                let head =
                    "\r\nContent-Type: \(contentType)\r\nContent-Range: bytes "
                    + "\(range.lowerBound)-\(range.upperBound)/\(reader.length)\r\n\r\n"
                try out.write(Array(head.utf8))
                try out.stream(reader, from: range.lowerBound, count: range.count)
                try out.write(Array("\r\n--\(boundary)".utf8))
            }
            try out.write(Array("--".utf8))
        }
    }

    /// The revision `rev` names, or the live winner.
    func readableRevision(_ database: Database, _ docID: String, rev: String?) throws -> StoredRevision {
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

    /// `PUT /db/doc/att?rev=…`: the bytes are streamed to a blob, then the revision is written.
    func put(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let (database, name, request) = (try c.database(), try c.parameter("path"), c.request)
        try DocumentWriter.validateAttachmentName(name)
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
        let upload = try blobs.makeWriter(database)
        do {
            try request.streamBody(
                limit: Limits.attachmentRequestBytes,
                tooLarge: "Attachment is larger than \(Limits.attachmentRequestBytes) bytes"
            ) { chunk in try upload.write(chunk) }
        } catch {
            upload.abort()
            throw error
        }
        let stored = try blobs.commit(upload)
        let identityLength =
            try encoding == nil
            ? stored.length
            : blobs.gzipIdentityLength(
                database, key: stored.key, limit: Limits.gzipIdentityBytes,
                tooLarge: "Attachment expands beyond \(Limits.gzipIdentityBytes) bytes",
                invalid: "Attachment body is not valid gzip")
        let contentType = request.head.headers["Content-Type"] ?? "application/octet-stream"
        let newAttachment = AttachmentInfo(
            name: name, contentType: contentType, digest: "md5-" + DocumentWriter.base64(stored.md5),
            length: identityLength,
            revpos: (base?.pos ?? 0) + 1, encoding: encoding, encodedLength: encoding == nil ? nil : stored.length,
            blobKey: stored.key)
        let rev = try documents.rewriteAttachments(database, docID, base: base, user: request.user) { atts in
            atts.removeAll { $0.name.utf8Equals(name) }
            // First, the others after it in their order, as CouchDB's `db_attachment_req` builds the list.
            atts.insert(newAttachment, at: 0)
        }
        var headers = HTTPHeaders()
        headers.set("ETag", "\"\(rev)\"")
        let location = [database.name, docID, name].map(PercentEncoding.segment).joined(separator: "/")
        headers.set("Location", "/" + location)
        return .json(.created, ["ok": true, "id": .string(docID), "rev": .string(rev.description)], headers: headers)
    }

    /// `DELETE /db/doc/att?rev=…`.
    func delete(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let (database, name, request) = (try c.database(), try c.parameter("path"), c.request)
        guard let revText = request.query["rev"] ?? request.head.headers["If-Match"]?.trimmingCharacters(in: "\"")
        else {
            throw CouchError.conflict
        }
        let base = try DocumentInput.parseRev(revText)
        let rev = try documents.rewriteAttachments(database, docID, base: base, user: request.user) {
            atts throws(CouchError) in
            guard atts.contains(where: { $0.name.utf8Equals(name) }) else {
                throw CouchError.notFound("Document is missing attachment")
            }
            atts.removeAll { $0.name.utf8Equals(name) }
        }
        return .json(.ok, ["ok": true, "id": .string(docID), "rev": .string(rev.description)])
    }
}

/// A `Range: bytes=…` request, read as mochiweb and `chttpd_db:parse_ranges` do.
enum ByteRange: Equatable {
    /// Send the whole attachment with 200: no header, a malformed one, `bytes=0-` (alone or among others), or
    /// ten ranges or more.
    case whole
    /// A first byte past the end, or a last byte before the first: 416.
    case unsatisfiable
    /// Inclusive first and last byte: 206.
    case bytes(Int, Int)
    /// Two to nine ranges, each inclusive and within the attachment, in the order asked: 206 multipart/byteranges.
    case several([ClosedRange<Int>])

    /// Most ranges answered part by part (CouchDB's `length(Ranges) < 10`); more get the whole attachment.
    static let maxRanges = 9

    static func parse(_ header: String?, length: Int) -> ByteRange {
        guard let header, header.hasPrefix("bytes=") else { return .whole }
        // mochiweb: the list split at commas, each part trimmed, empty parts dropped.
        let pieces = header.dropFirst("bytes=".count).split(separator: ",")
        let parts = pieces.map { String($0).trimmingCharacters(in: " ") }.filter { !$0.isEmpty }
        guard !parts.isEmpty, parts.count <= maxRanges else { return .whole }
        var ranges: [ClosedRange<Int>] = []
        for part in parts {
            switch single(Substring(part), length: length) {
            case .whole, .several: return .whole
            case .unsatisfiable: return .unsatisfiable
            case .bytes(let first, let last): ranges.append(first...last)
            }
        }
        if ranges.count == 1, let only = ranges.first { return .bytes(only.lowerBound, only.upperBound) }
        return .several(ranges)
    }

    /// One part (`first-last`, `first-` or `-suffix`).
    private static func single(_ spec: Substring, length: Int) -> ByteRange {
        guard let dash = spec.firstIndex(of: "-") else { return .whole }
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

extension AttachmentHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/{db}/_design/{design}/{path…}", .member, get),
            Route([.PUT], "/{db}/_design/{design}/{path…}", .databaseAdmin, body: .attachment, put),
            Route([.DELETE], "/{db}/_design/{design}/{path…}", .databaseAdmin, delete),
            Route(read, "/{db}/{doc}/{path…}", .member, get),
            Route([.PUT], "/{db}/{doc}/{path…}", .member, body: .attachment, put),
            Route([.DELETE], "/{db}/{doc}/{path…}", .member, delete),
        ]
    }
}
