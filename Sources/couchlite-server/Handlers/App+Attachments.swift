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

    private func getAttachment(_ database: Database, _ docID: String, _ name: String, _ request: Request, _ reply: Reply) throws {
        let revision = try readableRevision(database, docID, rev: request.query["rev"])
        guard let att = revision.attachments.first(where: { $0.name == name }) else {
            throw CouchError.notFound("Document is missing attachment")
        }
        let etag = "\"\(att.digest.split(separator: "-", maxSplits: 1).last.map(String.init) ?? att.digest)\""
        var headers = HTTPHeaders()
        headers.set("Content-Type", att.contentType)
        headers.set("ETag", etag)
        headers.set("Accept-Ranges", att.encoding == nil ? "bytes" : "none")
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
            try reply.begin(200, headers: headers, contentLength: att.length)
            let decoder = try GzipDecoder(limit: att.length)
            var offset = 0
            while offset < reader.length {
                let chunk = try reader.read(at: offset, upTo: App.streamChunk)
                if chunk.isEmpty { break }
                offset += chunk.count
                try reply.write(try decoder.decode(chunk))
            }
            try decoder.finish()
            return try reply.finish()
        }
        if let range = request.head.headers["Range"] {
            guard let (start, end) = ByteRange.parse(range, length: reader.length) else {
                headers.set("Content-Range", "bytes */\(reader.length)")
                return reply.error(.rangeNotSatisfiable, headers: headers)
            }
            headers.set("Content-Range", "bytes \(start)-\(end)/\(reader.length)")
            try reply.begin(206, headers: headers, contentLength: end - start + 1)
            try stream(reader, from: start, count: end - start + 1, to: reply)
            return try reply.finish()
        }
        try reply.begin(200, headers: headers, contentLength: reader.length)
        try stream(reader, from: 0, count: reader.length, to: reply)
        try reply.finish()
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
            guard let revision = try database.revision(docID, rev: try DocumentInput.parseRev(rev)), revision.body != nil else {
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

    private func putAttachment(_ database: Database, _ docID: String, _ name: String, _ request: Request, _ reply: Reply) throws {
        try App.validateAttachmentName(name)
        let base = try request.query["rev"].map { (text: String) throws(CouchError) -> RevID in try DocumentInput.parseRev(text) }
            ?? request.head.headers["If-Match"].map { (text: String) throws(CouchError) -> RevID in
                try DocumentInput.parseRev(text.trimmingCharacters(in: "\""))
            }
        if let length = request.body.contentLength, length > Limits.attachmentRequestBytes {
            throw CouchError.tooLarge("Attachment is larger than \(Limits.attachmentRequestBytes) bytes")
        }
        // Stream the bytes to a blob first; the revision is written only once they are safe on disk.
        let writer = try blobs(for: database).makeWriter()
        while true {
            let chunk: [UInt8]
            do {
                chunk = try request.body.read(upTo: App.streamChunk)
            } catch {
                writer.abort()
                throw CouchError(error)
            }
            if chunk.isEmpty { break }
            try writer.write(chunk)
            if writer.length > Limits.attachmentRequestBytes {
                writer.abort()
                throw CouchError.tooLarge("Attachment is larger than \(Limits.attachmentRequestBytes) bytes")
            }
        }
        let stored = try writer.commit()
        if let md5 = request.head.headers["Content-MD5"], md5 != App.base64(stored.md5) {
            throw CouchError.badRequest("Content-MD5 header does not match the attachment data (content_md5_mismatch)")
        }
        let contentType = request.head.headers["Content-Type"] ?? "application/octet-stream"
        let newAttachment = AttachmentInfo(
            name: name, contentType: contentType, digest: "md5-" + App.base64(stored.md5), length: stored.length,
            revpos: (base?.pos ?? 0) + 1, encoding: nil, encodedLength: nil, blobKey: stored.key)
        let rev = try rewriteAttachments(database, docID, base: base) { atts in
            atts.removeAll { $0.name == name }
            atts.append(newAttachment)
        }
        try reply.json(201, ["ok": true, "id": .string(docID), "rev": .string(rev.description)], headers: ["ETag": "\"\(rev)\""])
    }

    private func deleteAttachment(_ database: Database, _ docID: String, _ name: String, _ request: Request, _ reply: Reply) throws {
        guard let revText = request.query["rev"] ?? request.head.headers["If-Match"]?.trimmingCharacters(in: "\"") else {
            throw CouchError.conflict
        }
        let base = try DocumentInput.parseRev(revText)
        let rev = try rewriteAttachments(database, docID, base: base) { atts throws(CouchError) in
            guard atts.contains(where: { $0.name == name }) else {
                throw CouchError.notFound("Document is missing attachment")
            }
            atts.removeAll { $0.name == name }
        }
        try reply.json(200, ["ok": true, "id": .string(docID), "rev": .string(rev.description)])
    }

    /// Writes a new revision on `base` with the same body and edited attachments.
    func rewriteAttachments(
        _ database: Database, _ docID: String, base: RevID?,
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
        try edit(&atts)
        let write = RevisionWrite(
            docID: docID, path: base.map { [$0] } ?? [], deleted: false, body: body,
            attachments: atts.map { .stored($0) })
        guard let outcome = try database.applyEdits([write]).first else {
            throw CouchError.unknownError("store returned no result")
        }
        switch outcome.result {
        case .success(let rev): return rev
        case .failure(let error): throw CouchError(error)
        }
    }
}

/// A single `Range: bytes=…` specification (the only kind CouchDB serves).
enum ByteRange {
    /// - Returns: inclusive first and last byte, or nil when unsatisfiable or malformed.
    static func parse(_ header: String, length: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), length > 0 else { return nil }
        let spec = header.dropFirst("bytes=".count)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingPrefix(" ")
        let last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let suffix = Int(last), suffix > 0 else { return nil }
            return (max(length - suffix, 0), length - 1)
        }
        guard let start = Int(first), start < length else { return nil }
        if last.isEmpty { return (start, length - 1) }
        guard let end = Int(last), end >= start else { return nil }
        return (start, min(end, length - 1))
    }
}
