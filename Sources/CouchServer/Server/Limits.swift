import Foundation

/// Sizes the application enforces on request bodies and parameters (the engine's own limits live
/// in CouchWire's `HTTPLimits`).
package enum Limits {
    /// Largest JSON document body, in bytes (CouchDB's `[couchdb] max_document_size`, default 8,000,000).
    static var documentBytes: Int { live.documentBytes.value }
    /// Largest `_bulk_docs`, `_bulk_get`, `_revs_diff` or `_all_docs` body, in bytes. PouchDB sends
    /// attachments inline in `_bulk_docs`, so this is generous (CouchDB's `max_http_request_size`
    /// default is 4 GiB; we hold JSON bodies in memory, so keep it well below that).
    /// Changed live as `[chttpd] max_http_request_size`.
    static var bulkRequestBytes: Int { live.bulkRequestBytes.value }
    /// Largest body of small control requests (`_local` docs, `_revs_limit`, `_session`), in bytes.
    static let smallRequestBytes = 1024 * 1024
    /// Largest body an anonymous request (or a non-admin one to `_users`, which may only write its own
    /// user document) may send, in bytes: refused with 413 from the head, before any of it is read.
    static let anonymousRequestBytes = 1024 * 1024
    /// Most documents (or ids) in one `_bulk_docs`, `_bulk_get` or `_revs_diff` request. Each costs about a
    /// kilobyte of working memory whatever its size, so a body of 3-byte `{}` documents would otherwise
    /// cost 300 times its length. PouchDB sends 100 per batch, CouchDB's replicator 500.
    static let maxBulkDocs = 100_000
    /// Bytes of document bodies `_bulk_get` reads in one read transaction before it renders them: it reads its
    /// documents a run at a time (one reader checked out per run, not two per document), and this bounds what a run
    /// holds (plus one document).
    static let bulkGetReadBytes = 1024 * 1024
    /// Bytes read or written per step while streaming a body or a blob (request bodies, attachments).
    static let streamChunk = 256 * 1024
    /// Most ids one `GET /_uuids` may ask for (CouchDB's `[uuids] max_count`).
    static var maxUUIDCount: Int { live.maxUUIDCount.value }
    /// Most bytes of one body held in memory (JSON, a show function's `req.body`), whatever the limits say: half the
    /// machine's memory.
    static let heldBodyCeiling = Int(clamping: ProcessInfo.processInfo.physicalMemory / 2)
    /// Most ids one `GET /_uuids` answers whatever `[uuids] max_count` says (CouchDB takes any integer there and
    /// would build the whole list in memory: 2^63-1 is "no limit" in the setting, never a request for exabytes).
    static let uuidCountCeiling = 100_000
    /// Longest database name, in bytes (CouchDB's limit).
    static let databaseNameBytes = 238
}

extension Limits {
    /// Largest body carrying attachment bytes (multipart document or standalone attachment PUT),
    /// in bytes: several GiB of video stream through, never held in memory.
    /// Changed live as `[couchdb] max_attachment_size`.
    package static var attachmentRequestBytes: Int { live.attachmentRequestBytes.value }
    /// Largest decoded size of an attachment uploaded `Content-Encoding: gzip`, in bytes: the same as an
    /// identity upload may be. Decoding always streams (memory stays at one 64 KiB step), so this bounds
    /// the work a small upload can make every later reader do, not memory.
    static let gzipIdentityBytes = attachmentRequestBytes

    /// How many times its gzip size an attachment may decode to (plus `gzipExpansionSlack`). Real gzipped text stays
    /// far below (logs and JSON 5–20 times, a file of one repeated line about 100 at gzip's best); a gzip bomb of
    /// zeros is about 1,000 times, and checking its length would cost seconds of CPU per megabyte sent. At 64, a
    /// 4 MB upload decodes at most 256 MB to be checked: well under a second.
    static let maxGzipExpansion = 64
    /// What any small gzip body may decode to whatever its ratio (a few bytes of gzip for a short text).
    static let gzipExpansionSlack = 1024 * 1024

    /// The most a gzip body of `encoded` bytes is decoded to at ingest: its ratio's bound, within
    /// `gzipIdentityBytes`.
    static func gzipExpansionBound(encoded: Int) -> Int {
        let (product, overflow) = max(encoded, 0).multipliedReportingOverflow(by: maxGzipExpansion)
        guard !overflow, product <= gzipIdentityBytes - gzipExpansionSlack else { return gzipIdentityBytes }
        return product + gzipExpansionSlack
    }
}

extension Limits {
    /// The limits a server admin may change while the server runs (`_config`), at their built-in values.
    static let live = (
        documentBytes: LiveInt(8_000_000), bulkRequestBytes: LiveInt(512 * 1024 * 1024),
        maxUUIDCount: LiveInt(1000), attachmentRequestBytes: LiveInt(8 * 1024 * 1024 * 1024),
        sessionSeconds: LiveInt(600), maxPurgeDocuments: LiveInt(100), maxPurgeRevisions: LiveInt(1000),
        maxDatabasesPerInfoRequest: LiveInt(100)
    )

    /// Refuses a bulk request of more than `maxBulkDocs` items (413) before any is processed.
    static func checkBulkCount(_ count: Int) throws(CouchError) {
        guard count <= maxBulkDocs else {
            throw .tooLarge("Too many documents in one request (\(count); at most \(maxBulkDocs))")
        }
    }
}
