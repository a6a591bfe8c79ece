import CouchCrypto

/// Deterministic rev ids for interactive edits (`new_edits=true`).
///
/// The hash of a new revision is the md5, as 32 lowercase hex digits, of this byte string (integers big-endian):
///
///     "couchlite-rev-1" 0x00
///     u8   deleted (0 or 1)
///     u64  parent pos (0 when there is no parent)
///     u32  byte length of the parent hash, then its UTF-8 bytes (length 0 when there is no parent)
///     u64  byte length of the body, then the body bytes (the serialized JSON object of the user's fields)
///     u32  number of attachments, then for each attachment sorted by the UTF-8 bytes of its name:
///          u32 name length, name bytes, u32 digest length, digest bytes (the wire digest, e.g. "md5-…")
///
/// Every field is length-prefixed, so no two different inputs encode to the same bytes. CouchDB hashes an Erlang
/// term of the same facts (`couch_db:new_revid`); any deterministic 32-hex id is compatible. The same edit of the
/// same parent therefore yields the same rev, which is what makes a retried `PUT` a conflict, not a duplicate.
public enum RevisionHash {
    /// Computes the hash part of a new rev id.
    /// - Parameters:
    ///   - parent: the revision being edited, nil for a first revision.
    ///   - deleted: the new revision is a deletion.
    ///   - body: the serialized body.
    ///   - attachments: (name, digest) of every attachment of the new revision.
    public static func compute(
        parent: RevID?, deleted: Bool, body: [UInt8], attachments: [(name: String, digest: String)]
    ) -> String {
        let digest = Digest(.md5)
        digest.update(Array("couchlite-rev-1".utf8) + [0, deleted ? 1 : 0])
        digest.update(bigEndian(UInt64(parent?.pos ?? 0)))
        let parentHash = Array((parent?.hash ?? "").utf8)
        digest.update(bigEndian(UInt32(truncatingIfNeeded: parentHash.count)))
        digest.update(parentHash)
        digest.update(bigEndian(UInt64(body.count)))
        digest.update(body)
        let sorted = attachments.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        digest.update(bigEndian(UInt32(truncatingIfNeeded: sorted.count)))
        for attachment in sorted {
            let name = Array(attachment.name.utf8)
            let value = Array(attachment.digest.utf8)
            digest.update(bigEndian(UInt32(truncatingIfNeeded: name.count)))
            digest.update(name)
            digest.update(bigEndian(UInt32(truncatingIfNeeded: value.count)))
            digest.update(value)
        }
        return digest.finalize().hexString
    }

    private static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
