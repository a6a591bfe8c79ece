import CouchStore
import CouchWire

/// The body of a long streamed response (`_changes`, `_all_docs`): rows are appended as they are rendered and
/// sent whenever `flushBytes` are waiting, so memory holds one row and one buffer, never the response, whatever
/// the database's size. Inline attachment data (`attachments=true`) is base64-encoded from its blob in bounded
/// chunks straight into the buffer, never loaded whole.
struct FeedWriter {
    let stream: ResponseStream
    private(set) var buffer: [UInt8] = []

    /// Bytes gathered before they are handed to the connection (about one TCP send buffer).
    static let flushBytes = 64 * 1024
    /// Most buffer capacity a live feed keeps while it waits for the next change. Its buffer grows (by doubling) to
    /// what its rows need, up to about two `flushBytes`; a feed that then sits waiting gives that back. A long-poll
    /// or continuous feed spends most of its life waiting, and with 128 KiB reserved for each, the open feeds of
    /// the soak (bench/soak.py) held 34 MiB of the heap (heaptrack), most of it never written.
    static let waitingCapacity = 4 * 1024

    init(_ stream: ResponseStream) {
        self.stream = stream
    }

    mutating func append(_ bytes: [UInt8]) throws {
        buffer += bytes
        if buffer.count >= FeedWriter.flushBytes { try send() }
    }

    mutating func append(_ text: String) throws { try append(Array(text.utf8)) }

    /// Hands what is gathered to the connection (still buffered there until `flush`).
    mutating func send() throws {
        guard !buffer.isEmpty else { return }
        try stream.write(buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Sends everything gathered and pushes it to the client (a live feed's rows must not wait, and then it waits:
    /// a big buffer is let go).
    mutating func flush() throws {
        try send()
        try stream.flush()
        if buffer.capacity > FeedWriter.waitingCapacity { buffer = [] }
    }

    /// Appends `row` with `doc` as its last member (`"doc":…`), the document written by `appendDocument`.
    mutating func appendRow(
        _ row: JSONObject, doc: (rendered: JSONObject, inline: [AttachmentInfo])?, database: Database,
        blobs: BlobRegistry
    ) throws {
        var bytes: [UInt8] = []
        JSON.object(row).serialize(into: &bytes)
        guard let doc else { return try append(bytes) }
        bytes.removeLast()  // the closing brace: `doc` goes last, as CouchDB puts it
        bytes += Array(",\"doc\":".utf8)
        try append(bytes)
        try appendDocument(doc.rendered, inline: doc.inline, database: database, blobs: blobs)
        try append([UInt8(ascii: "}")])
    }

    /// Appends a document rendered without inline data, streaming the `data` of each attachment in `inline` into
    /// its `_attachments` entry right after `digest` (CouchDB's member order: `content_type`, `revpos`,
    /// `digest`, `data`, then the encoding fields).
    mutating func appendDocument(
        _ doc: JSONObject, inline: [AttachmentInfo], database: Database, blobs: BlobRegistry
    ) throws {
        guard !inline.isEmpty, case .object(let attachments)? = doc["_attachments"] else {
            return try append(JSON.object(doc).serialized())
        }
        buffer.append(UInt8(ascii: "{"))
        for (index, member) in doc.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            JSON.appendQuoted(member.key, to: &buffer)
            buffer.append(UInt8(ascii: ":"))
            guard member.key == "_attachments" else {
                member.value.serialize(into: &buffer)
                continue
            }
            buffer.append(UInt8(ascii: "{"))
            for (attIndex, entry) in attachments.enumerated() {
                if attIndex > 0 { buffer.append(UInt8(ascii: ",")) }
                JSON.appendQuoted(entry.key, to: &buffer)
                buffer.append(UInt8(ascii: ":"))
                guard case .object(let fields) = entry.value, let att = inline.first(where: { $0.name == entry.key })
                else {
                    entry.value.serialize(into: &buffer)
                    continue
                }
                buffer.append(UInt8(ascii: "{"))
                for (fieldIndex, field) in fields.enumerated() {
                    if fieldIndex > 0 { buffer.append(UInt8(ascii: ",")) }
                    JSON.appendQuoted(field.key, to: &buffer)
                    buffer.append(UInt8(ascii: ":"))
                    field.value.serialize(into: &buffer)
                    if field.key == "digest" {
                        buffer += Array(",\"data\":\"".utf8)
                        try appendBase64(of: att, database: database, blobs: blobs)
                        buffer.append(UInt8(ascii: "\""))
                    }
                }
                buffer.append(UInt8(ascii: "}"))
            }
            buffer.append(UInt8(ascii: "}"))
            if buffer.count >= FeedWriter.flushBytes { try send() }
        }
        try append([UInt8(ascii: "}")])
    }

    /// The attachment's decoded bytes as base64, read (and gzip-decoded) in bounded pieces, sent on as the
    /// buffer fills.
    private mutating func appendBase64(of att: AttachmentInfo, database: Database, blobs: BlobRegistry) throws {
        let stream = self.stream  // not `self` in the closure: `buffer` is borrowed from it meanwhile
        try blobs.appendBase64(database, att, into: &buffer, drainAt: FeedWriter.flushBytes) { buffer in
            try stream.write(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }
}

extension FeedWriter {
    /// `revision` rendered for a feed row, with the attachments whose bytes are to be inlined left out of the
    /// JSON (`appendDocument` streams them in).
    static func document(_ revision: StoredRevision, id: String, info: DocumentInfo?, options: RenderOptions) throws
        -> (rendered: JSONObject, inline: [AttachmentInfo])
    {
        let renderer = DocumentRenderer(id: id, info: info, options: options, inline: nil)
        let inline =
            options.attachments && !options.follows
            ? revision.attachments.filter { options.sendsData(revpos: $0.revpos) } : []
        return (try renderer.render(revision), inline)
    }
}
