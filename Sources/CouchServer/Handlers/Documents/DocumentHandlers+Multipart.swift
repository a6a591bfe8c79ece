import CouchStore
import CouchWire
import RevTree

/// Documents sent as `multipart/related` (JSON part, then attachment bytes) and `open_revs` replies
/// as `multipart/mixed`, in the exact part layout the CouchDB replicator requires (protocol.md §2).
extension DocumentHandlers {
    /// The attachments of `revision` whose bytes follow the JSON part.
    private func following(_ revision: StoredRevision, _ options: RenderOptions) -> [AttachmentInfo] {
        revision.attachments.filter { options.sendsData(revpos: $0.revpos) }
    }

    private func multipartAttachments(_ atts: [AttachmentInfo]) -> [MultipartWriter.Attachment] {
        atts.map {
            MultipartWriter.Attachment(
                name: $0.name, contentType: $0.contentType, length: $0.encodedLength ?? $0.length, encoding: $0.encoding
            )
        }
    }

    /// Writes one `multipart/related` body: JSON part then each following attachment, streamed.
    private func writeRelatedBody(
        _ database: Database, writer: inout MultipartWriter, json: [UInt8], atts: [AttachmentInfo],
        out: ResponseStream
    ) throws {
        try out.write(writer.partHeader(headers: MultipartWriter.jsonPartHeaders))
        try out.write(json)
        for att in atts {
            let reader = try blobs.store(for: database).openReader(att.blobKey)
            defer { reader.close() }
            let headers = MultipartWriter.attachmentHeaders(
                name: att.name, contentType: att.contentType, length: reader.length, encoding: att.encoding)
            try out.write(writer.partHeader(headers: headers))
            try out.stream(reader, from: 0, count: reader.length)
        }
        try out.write(writer.closing())
    }

    /// `GET /db/doc` with `Accept: multipart/related`.
    func sendMultipartRelated(
        _ database: Database, _ docID: String, info: DocumentInfo?, revision: StoredRevision, options: RenderOptions,
        etag: String
    ) throws -> Response {
        let renderer = DocumentRenderer(id: docID, info: info, options: options, inline: nil)
        let json = JSON.object(try renderer.render(revision)).serialized()
        let atts = following(revision, options)
        let writer = MultipartWriter()
        let length = writer.relatedBodyLength(jsonLength: json.count, attachments: multipartAttachments(atts))
        var headers = HTTPHeaders()
        headers.set("Content-Type", writer.contentType(mediaType: "multipart/related"))
        headers.set("ETag", etag)
        headers.sandboxAttachment()
        return .stream(.ok, headers: headers, contentLength: length) { out in
            var writer = writer
            try writeRelatedBody(database, writer: &writer, json: json, atts: atts, out: out)
        }
    }

    /// `GET /db/doc?open_revs=…` with `Accept: multipart/mixed`: one part per revision —
    /// `application/json` when no attachment bytes follow, a nested `multipart/related` when they
    /// do, and `application/json; error="true"` with `{"missing":rev}` for unknown revisions.
    func sendOpenRevsMultipart(
        _ database: Database, _ docID: String, info: DocumentInfo?, results: [(rev: RevID, revision: StoredRevision?)],
        options: RenderOptions
    ) throws -> Response {
        let outer = MultipartWriter()
        var headers = HTTPHeaders()
        headers.set("Content-Type", outer.contentType(mediaType: "multipart/mixed"))
        headers.sandboxAttachment()
        return .stream(.ok, headers: headers) { out in
            try writeOpenRevs(database, docID, info: info, results: results, options: options, outer: outer, out: out)
        }
    }

    private func writeOpenRevs(
        _ database: Database, _ docID: String, info: DocumentInfo?, results: [(rev: RevID, revision: StoredRevision?)],
        options: RenderOptions, outer: MultipartWriter, out: ResponseStream
    ) throws {
        var outer = outer
        let renderer = DocumentRenderer(id: docID, info: info, options: options, inline: nil)
        for (rev, revision) in results {
            guard let revision else {
                try out.write(
                    outer.partHeader(headers: [("Content-Type", MultipartWriter.missingRevisionContentType)]))
                try out.write(JSON.object(JSONObject([("missing", .string(rev.description))])).serialized())
                continue
            }
            let json = JSON.object(try renderer.render(revision)).serialized()
            let atts = following(revision, options)
            if atts.isEmpty {
                try out.write(outer.partHeader(headers: MultipartWriter.jsonPartHeaders))
                try out.write(json)
                continue
            }
            var inner = MultipartWriter()
            try out.write(
                outer.partHeader(headers: [("Content-Type", inner.contentType(mediaType: "multipart/related"))]))
            try writeRelatedBody(database, writer: &inner, json: json, atts: atts, out: out)
        }
        try out.write(outer.closing())
    }

    /// CouchDB refuses form posts whose `Referer` is missing or names another host (a guard
    /// against cross-site form submission; `couch_httpd:validate_referer`).
    static func validateReferer(_ request: Request) throws(CouchError) {
        guard let referer = request.head.headers["Referer"] else {
            throw .badRequest("Referer header required.")
        }
        let host = request.head.headers["X-Forwarded-Host"] ?? request.head.headers["Host"] ?? ""
        var rest = Substring(referer)
        if let colon = rest.firstIndex(of: ":"), rest[colon...].hasPrefix("://") {
            rest = rest[rest.index(colon, offsetBy: 3)...]
        }
        let refererHost = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !host.isEmpty, refererHost.lowercased() == host.lowercased() else {
            throw .badRequest("Referer header must match host.")
        }
    }

    /// `POST /db/doc` as `multipart/form-data` from an HTML form: `_rev` (or `_doc`, the whole
    /// document as JSON) and `_attachments` file fields (CouchDB's form upload).
    func postForm(_ c: RequestContext) throws -> Response {
        let docID = try c.docID()
        let (database, request) = (try c.database(), c.request)
        try DocumentHandlers.validateReferer(request)
        guard request.contentType == "multipart/form-data" else {
            throw CouchError.badContentType("Content-Type must be multipart/form-data")
        }
        var fieldName: String?
        var fileName: String?
        var fileType = "application/octet-stream"
        var fieldValue: [UInt8] = []
        var writer: BlobWriter?
        var revText: String?
        var docText: [UInt8]?
        var uploads: [AttachmentInfo] = []
        func handle(_ event: MultipartBorrowedEvent) throws {
            switch event {
            case .partBegin(let headers):
                let disposition = MultipartHeaderValue(
                    parsing: MultipartHeaders.value("Content-Disposition", in: headers) ?? "")
                fieldName = disposition.parameter("name")
                fileName = disposition.parameter("filename")
                fileType = MultipartHeaders.value("Content-Type", in: headers) ?? "application/octet-stream"
                fieldValue = []
                writer =
                    fieldName == "_attachments" && fileName?.isEmpty == false
                    ? try blobs.makeWriter(database) : nil
            case .bodyBytes(let bytes):
                if let writer {
                    try writer.write(bytes)
                } else {
                    fieldValue.append(contentsOf: bytes)
                    guard fieldValue.count <= Limits.smallRequestBytes else {
                        throw CouchError.tooLarge("Form field is too large")
                    }
                }
            case .partEnd:
                if let current = writer, let fileName {
                    let stored = try blobs.commit(current)
                    try DocumentWriter.validateAttachmentName(fileName)
                    uploads.append(
                        AttachmentInfo(
                            name: fileName, contentType: fileType, digest: "md5-" + DocumentWriter.base64(stored.md5),
                            length: stored.length, revpos: 0, encoding: nil, encodedLength: nil, blobKey: stored.key))
                    writer = nil
                } else if fieldName == "_rev" {
                    revText = String(decoding: fieldValue, as: UTF8.self)
                } else if fieldName == "_doc" {
                    docText = fieldValue
                }
            case .end:
                break
            }
        }
        try request.streamMultipart(
            limit: Limits.attachmentRequestBytes, tooLarge: "Form upload is too large", handle)
        let rev: RevID
        if let docText {
            // `_doc`: the whole document as JSON (its `_rev` is the base); files replace same-named attachments.
            let parsed: JSON
            do {
                parsed = try JSON.parse(docText, memoryBudget: .requestBody)
            } catch let error where error.kind == .tooLarge {
                throw CouchError.tooLarge("The JSON body has too many small values to hold in memory")
            } catch {
                throw CouchError.invalidJSON
            }
            let input = try DocumentInput(parsed)
            var write = try documents.makeWrite(
                database, docID: docID, input: input, base: input.rev, newEdits: true, followed: nil, user: request.user
            )
            let names = Set(uploads.map(\.name))
            write.attachments = write.attachments.filter { !names.contains($0.name) } + uploads.map { .stored($0) }
            let outcome = try documents.applyEdit(database, write, user: request.user)
            switch outcome.result {
            case .success(let written): rev = written
            case .failure(let error): throw CouchError(error)
            }
        } else {
            guard let revText else { throw CouchError.badRequest("Form must have a _rev or a _doc field") }
            let base = try DocumentInput.parseRev(revText)
            rev = try documents.rewriteAttachments(database, docID, base: base, user: request.user) { atts in
                for var upload in uploads {
                    upload.revpos = base.pos + 1
                    atts.removeAll { $0.name.utf8Equals(upload.name) }
                    atts.append(upload)
                }
            }
        }
        return .json(
            .created, ["ok": true, "id": .string(docID), "rev": .string(rev.description)],
            headers: ["ETag": "\"\(rev)\""])
    }
}
