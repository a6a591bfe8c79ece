import CouchStore
import CouchWire

/// Reading document bodies that arrive as JSON or as `multipart/related` (the JSON part first,
/// then one part per `"follows": true` attachment, matched in JSON order as CouchDB does).
extension DocumentWriter {
    /// The body of a document write to `docID`, JSON or `multipart/related` (its attachments already stored).
    func readBody(_ request: Request, _ database: Database, docID: String) throws
        -> (DocumentInput, FollowedAttachments?)
    {
        if request.contentType == "multipart/related" { return try readMultipartDocument(request, database, docID) }
        return (try DocumentInput(try request.documentJSONBody()), nil)
    }

    private func readMultipartDocument(_ request: Request, _ database: Database, _ docID: String) throws
        -> (DocumentInput, FollowedAttachments?)
    {
        var reader = MultipartDocumentReader(blobs: blobs, database: database, docID: docID)
        try request.streamMultipart(
            limit: Limits.attachmentRequestBytes,
            tooLarge: "Request body is larger than \(Limits.attachmentRequestBytes) bytes"
        ) { event in try reader.handle(event) }
        return try reader.result()
    }
}

/// Collects the parts of one `multipart/related` document: the JSON part in memory (bounded), each
/// attachment part streamed into a blob.
private struct MultipartDocumentReader {
    let blobs: BlobRegistry
    package let database: Database
    let docID: String
    private var partIndex = -1
    private var headers: [(String, String)] = []
    private var json: [UInt8] = []
    private var input: DocumentInput?
    /// `follows` attachments in JSON order, with the byte count each part must have and the digest announced.
    private var expected: [(name: String, bytes: Int?, digest: String?)] = []
    private var writer: BlobWriter?
    private var followed = FollowedAttachments()
    private var ended = false

    init(blobs: BlobRegistry, database: Database, docID: String) {
        self.blobs = blobs
        self.database = database
        self.docID = docID
    }

    mutating func handle(_ event: MultipartBorrowedEvent) throws {
        switch event {
        case .partBegin(let partHeaders):
            partIndex += 1
            headers = partHeaders
            if partIndex == 0 {
                // The document part must say it is JSON (couch_httpd_multipart:mp_parse_doc); parameters such as
                // Couchbase Lite Java's `charset=utf-8` are fine.
                let type = MultipartHeaders.value("Content-Type", in: partHeaders).map {
                    MultipartHeaderValue(parsing: $0).value
                }
                guard type == "application/json" else {
                    throw CouchError.badContentType("Content-Type must be application/json")
                }
            } else {
                guard partIndex - 1 < expected.count else {
                    throw CouchError.badRequest("More multipart parts than attachments marked follows")
                }
                // An announced md5 names the blob the bytes will be if they are right, so bytes already stored are
                // only hashed; sha1 is computed only to check an announced `sha1-` digest.
                let digest = expected[partIndex - 1].digest
                writer = try blobs.makeWriter(
                    database, sha1: digest?.hasPrefix("sha1-") == true,
                    expecting: DocumentWriter.blobKey(md5Digest: digest))
            }
        case .bodyBytes(let bytes):
            if partIndex == 0 {
                json.append(contentsOf: bytes)
                guard json.count <= Limits.documentBytes else { throw CouchError.documentTooLarge(docID) }
            } else if let writer {
                try writer.write(bytes)
                if let limit = expected[partIndex - 1].bytes, writer.length > limit {
                    throw CouchError.badRequest(
                        "Attachment \(expected[partIndex - 1].name) is longer than its declared length")
                }
            }
        case .partEnd:
            if partIndex == 0 {
                try finishJSONPart()
            } else if let writer {
                let slot = expected[partIndex - 1]
                if let declared = slot.bytes, writer.length != declared {
                    writer.abort()
                    throw CouchError.badRequest("Attachment \(slot.name) is shorter than its declared length")
                }
                let stored: (key: String, md5: [UInt8], sha1: [UInt8]?, length: Int)
                do {
                    stored = try blobs.commit(writer)
                } catch BlobStoreError.digestMismatch {
                    // What `DocumentWriter.followedDigest` answers when a stored copy's md5 differs from the announced one.
                    throw CouchError.contentMD5Mismatch
                }
                followed.parts[ExactName(slot.name)] = FollowedAttachments.Part(
                    key: stored.key, md5: stored.md5, sha1: stored.sha1, length: stored.length)
                self.writer = nil
            }
        case .end:
            ended = true
        }
    }

    private mutating func finishJSONPart() throws {
        var bytes = json
        if MultipartHeaders.value("Content-Encoding", in: headers)?.lowercased() == "gzip" {
            do {
                bytes = try Gzip.decompress(bytes, limit: Limits.documentBytes)
            } catch {
                throw CouchError.badRequest("The gzip-encoded JSON part could not be decoded")
            }
        }
        let parsed: JSON
        do {
            parsed = try JSON.parse(bytes, memoryBudget: .requestBody)
        } catch let error where error.kind == .tooLarge {
            throw CouchError.tooLarge("The JSON body has too many small values to hold in memory")
        } catch {
            throw CouchError.invalidJSON
        }
        let document = try DocumentInput(parsed)
        for (name, value) in document.attachments ?? JSONObject() where value["follows"]?.boolValue == true {
            let declared = value["encoding"] == nil ? value["length"]?.intValue : value["encoded_length"]?.intValue
            expected.append((name, declared, value["digest"]?.stringValue))
        }
        input = document
    }

    func result() throws -> (DocumentInput, FollowedAttachments?) {
        guard let input, ended else { throw CouchError.badRequest("Truncated multipart body") }
        guard followed.parts.count == expected.count else {
            throw CouchError.badRequest("Fewer multipart parts than attachments marked follows")
        }
        // Earlier parts may have been committed long ago; their revision is written next.
        try blobs.refresh(followed.parts.values.map(\.key), in: database)
        return (input, followed)
    }
}
