import CouchCrypto
import CouchStore
import CouchWire

/// Attachment bytes as they leave the store, decoded when stored gzip-encoded, always in bounded
/// pieces: an attachment uploaded as a 1 MB gzip bomb that inflates to 1 GiB is never inflated whole,
/// whichever route sends it (plain GET, `attachments=true`, `_bulk_get`, `_changes`).
extension BlobRegistry {
    /// Hands the identity bytes of `att` to `sink` in pieces of at most `Limits.streamChunk` (stored bytes)
    /// or 64 KiB (decoded gzip steps).
    /// - Parameter limit: Most decoded bytes accepted; more is a corrupt attachment (its recorded
    ///   `length` is what clients were promised). Defaults to the recorded length.
    /// - Throws: 500 for a blob that is missing, short or not valid gzip (logged, reason generic), and
    ///   whatever `sink` throws.
    func streamIdentityBytes(
        _ database: Database, _ att: AttachmentInfo, limit: Int? = nil,
        _ sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let reader = try store(for: database).openReader(att.blobKey)
        defer { reader.close() }
        let decoder: GzipDecoder?
        if att.encoding == "gzip" {
            decoder = try GzipDecoder(limit: limit ?? max(att.length, 0))
        } else {
            decoder = nil
        }
        var offset = 0
        while offset < reader.length {
            let chunk = try reader.read(at: offset, upTo: Limits.streamChunk)
            if chunk.isEmpty { throw CouchError.internalError("attachment \(att.blobKey) is shorter than recorded") }
            offset += chunk.count
            if let decoder {
                try chunk.withUnsafeBytes { try decoder.decode($0, sink: sink) }
            } else {
                try chunk.withUnsafeBytes { try sink($0) }
            }
        }
        try decoder?.finish()
    }

    /// The decoded size of a stored gzip blob, found by decoding it in 64 KiB steps that are counted and dropped;
    /// decoding stops as soon as it passes `limit`, or `Limits.maxGzipExpansion` times the blob's size (a gzip bomb
    /// costs a bounded fraction of a second to refuse, not seconds per megabyte).
    /// - Parameters:
    ///   - tooLarge: The reason of the 413 past `limit`.
    ///   - invalid: The reason of the 400 when the blob is not valid gzip.
    /// - Throws: 413 `tooLarge` past `limit`; 400 past the expansion bound, or when the blob is not valid gzip.
    func gzipIdentityLength(_ database: Database, key: String, limit: Int, tooLarge: String, invalid: String) throws
        -> Int
    {
        let reader = try store(for: database).openReader(key)
        defer { reader.close() }
        let bound = Limits.gzipExpansionBound(encoded: reader.length)
        let decoder = try GzipDecoder(limit: min(limit, bound))
        var offset = 0
        do {
            while offset < reader.length {
                let chunk = try reader.read(at: offset, upTo: Limits.streamChunk)
                if chunk.isEmpty { break }
                offset += chunk.count
                try chunk.withUnsafeBytes { try decoder.decode($0) { _ in } }
            }
            try decoder.finish()
        } catch GzipError.limitExceeded {
            guard bound < limit else { throw CouchError.tooLarge(tooLarge) }
            throw CouchError.badRequest(
                "Attachment expands more than \(Limits.maxGzipExpansion) times its gzip size (a gzip bomb?)")
        } catch is GzipError {
            throw CouchError.badRequest(invalid)
        }
        return decoder.totalOut
    }

    /// The identity bytes of `att` base64-encoded into `buffer`, which `drain` empties (sends) whenever it holds
    /// `drainAt` bytes or more: memory is one read piece and one buffer, whatever the attachment weighs.
    func appendBase64(
        _ database: Database, _ att: AttachmentInfo, into buffer: inout [UInt8], drainAt: Int,
        _ drain: (inout [UInt8]) throws -> Void
    ) throws {
        var encoder = Base64Encoder()
        try streamIdentityBytes(database, att) { piece in
            encoder.update(piece, into: &buffer)
            if buffer.count >= drainAt { try drain(&buffer) }
        }
        encoder.finish(into: &buffer)
    }
}

extension Response {
    /// A 200 JSON document whose inline attachment data streams in (chunked), or one body when it has none.
    package static func json(_ value: JSON, inline: InlineAttachments, headers: HTTPHeaders = HTTPHeaders()) -> Response
    {
        guard !inline.isEmpty else { return json(.ok, value, headers: headers) }
        var bytes = value.serialized()
        bytes.append(UInt8(ascii: "\n"))
        return .stream(.ok, headers: headers) { out in
            // HEAD sends no body: the attachments need not be read (nor inflated) at all.
            if !out.isHEAD { try inline.write(bytes, to: out) }
        }
    }
}

extension ResponseStream {
    /// Copies `count` bytes of a blob into the response in bounded pieces.
    package func stream(_ reader: BlobReader, from start: Int, count: Int) throws {
        var offset = start
        let end = start + count
        while offset < end {
            let chunk = try reader.read(at: offset, upTo: min(Limits.streamChunk, end - offset))
            if chunk.isEmpty { throw CouchError.unknownError("attachment data is shorter than recorded") }
            offset += chunk.count
            try write(chunk)
        }
    }
}

/// Inline `data` of `attachments=true` documents, streamed into the response instead of built in memory.
///
/// The renderer puts a placeholder string in each `data` member (a per-response random nonce and an index,
/// which no stored text can predict); ``write(_:to:)`` sends the serialized JSON up to each placeholder, then
/// the attachment's bytes base64-encoded as they are read (and decoded), then the rest. Memory per document
/// is its JSON plus one read buffer, whatever the attachments weigh.
package final class InlineAttachments {
    private let blobs: BlobRegistry
    private let database: Database
    /// 32 hex digits, fresh per response.
    private let nonce: [UInt8]
    private var pending: [AttachmentInfo] = []

    init(_ blobs: BlobRegistry, _ database: Database) {
        self.blobs = blobs
        self.database = database
        nonce = Array(("inline-" + Secrets.randomBytes(16).hexString + "-").utf8)
    }

    /// The `data` value standing for `att` until ``write(_:to:)`` replaces it.
    func placeholder(for att: AttachmentInfo) -> String {
        pending.append(att)
        return String(decoding: nonce, as: UTF8.self) + String(pending.count - 1)
    }

    /// Whether any placeholder was handed out since the last write.
    var isEmpty: Bool { pending.isEmpty }

    /// Sends `serialized`, streaming each placeholder's attachment in its place; then forgets them.
    func write(_ serialized: [UInt8], to out: ResponseStream) throws {
        defer { pending.removeAll() }
        guard !pending.isEmpty else { return try out.write(serialized) }
        var start = 0
        var searchFrom = 0
        while let found = Self.find(nonce, in: serialized, from: searchFrom) {
            var end = found + nonce.count
            var index = 0
            while end < serialized.count, serialized[end] &- UInt8(ascii: "0") < 10 {
                index = index &* 10 &+ Int(serialized[end] &- UInt8(ascii: "0"))
                end += 1
            }
            guard index < pending.count else {
                searchFrom = end
                continue
            }
            try out.write(Array(serialized[start..<found]))
            try streamBase64(pending[index], to: out)
            start = end
            searchFrom = end
        }
        try out.write(Array(serialized[start...]))
    }

    private func streamBase64(_ att: AttachmentInfo, to stream: ResponseStream) throws {
        var out: [UInt8] = []
        out.reserveCapacity(Limits.streamChunk / 3 * 4 + 4)
        try blobs.appendBase64(database, att, into: &out, drainAt: Limits.streamChunk) { out in
            try stream.write(out)
            out.removeAll(keepingCapacity: true)
        }
        try stream.write(out)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var i = start
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == first, haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

extension HTTPHeaders {
    /// Any writer may store an attachment as `text/html`, SVG or with no type, and it is served from the
    /// server's own origin, where cookie sessions live: a stored page must not run script there.
    /// `Content-Security-Policy: sandbox` (CouchDB 3.4's default `[csp] attachments_header_value`) makes
    /// the browser treat the response as a sandboxed, opaque-origin document (no script, no cookies, no
    /// same-origin requests), and `nosniff` stops it from guessing a script or page out of other types.
    mutating func sandboxAttachment() {
        set("Content-Security-Policy", "sandbox")
        set("X-Content-Type-Options", "nosniff")
    }
}
