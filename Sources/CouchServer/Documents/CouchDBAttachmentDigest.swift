import CouchStore
import CouchWire
import Foundation
import Synchronization

/// The md5 CouchDB 3.4.3 hashes into a new revision for an attachment couchlite stores as it came: CouchDB stores
/// the types of `[attachments] compressible_types` (`text/*, application/javascript, application/json,
/// application/xml`) gzipped and takes the md5 of its gzip output, so the same edit of a document with a text
/// attachment makes the same rev on both only if couchlite hashes that md5 too. Recomputed from the stored bytes
/// (`GzipDigest`, CouchDB's zlib settings) when a revision is made, and remembered by blob, so a document edited
/// again with the attachment as a stub does not compress it again.
///
/// The digest the API reports stays the md5 of the bytes couchlite serves (see `DocumentWriter.ingestAttachments`);
/// only the rev hash uses this one. Attachments already gzip-encoded (replicated from CouchDB) hash their own
/// digest, which is already the md5 of the gzip; one of more than `maxBytes` hashes its own too (a different rev
/// than CouchDB's, never a slow write).
package final class CouchDBAttachmentDigest: Sendable {
    /// Larger text-like attachments are hashed by their own digest: compressing them in the writer's transaction
    /// would hold every other write of the database.
    static let maxBytes = 16 * 1024 * 1024
    /// Remembered digests (blob key → `md5-…`), forgotten all at once when full.
    static let cacheEntries = 4096

    private let blobs: BlobRegistry
    private let remembered = Mutex<[String: String]>([:])

    package init(blobs: BlobRegistry) {
        self.blobs = blobs
    }

    /// The hook for `Store.init(attachmentHashDigest:)`.
    package var hook: AttachmentHashDigest {
        { [self] database, attachment in digest(database: database, attachment) }
    }

    func digest(database: String, _ attachment: AttachmentInfo) -> String? {
        guard attachment.encoding == nil, attachment.length <= Self.maxBytes,
            Self.isCompressible(attachment.contentType)
        else { return nil }
        if let known = remembered.withLock({ $0[attachment.blobKey] }) { return known }
        guard let md5 = try? compressedMD5(database: database, key: attachment.blobKey) else { return nil }
        let digest = "md5-" + DocumentWriter.base64(md5)
        remembered.withLock { cache in
            if cache.count >= Self.cacheEntries { cache.removeAll(keepingCapacity: true) }
            cache[attachment.blobKey] = digest
        }
        return digest
    }

    private func compressedMD5(database: String, key: String) throws -> [UInt8] {
        let reader = try blobs.store(for: database).openReader(key)
        defer { reader.close() }
        let digest = try GzipDigest()
        var offset = 0
        while offset < reader.length {
            let chunk = try reader.read(at: offset, upTo: 256 * 1024)
            if chunk.isEmpty { break }
            digest.update(chunk)
            offset += chunk.count
        }
        return digest.finalize()
    }

    /// `couch_db:compressible_att_type/1` with the default `compressible_types`: each pattern (`*` any text)
    /// must match the whole type, ignoring case, optionally followed by parameters (`; charset=utf-8`) and
    /// surrounded by blanks.
    static func isCompressible(_ contentType: String) -> Bool {
        let type = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = type.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return trimmed.hasPrefix("text/") || trimmed == "application/javascript" || trimmed == "application/json"
            || trimmed == "application/xml"
    }
}
