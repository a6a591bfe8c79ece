import CouchCrypto
import Foundation

/// Rev ids for interactive edits (`new_edits=true`), computed as CouchDB 3.4.3's `couch_db:new_revid/1` does, so
/// that the same edit of the same parent is the same revision on couchlite and on CouchDB (never a conflict when
/// they replicate), and a retried `PUT` is a conflict rather than a duplicate.
///
/// The hash is the md5, as 32 lowercase hex digits, of `term_to_binary(Term, [{minor_version, 1}])` (see
/// `ErlangTerm`) where `Term` is
///
///     [Deleted, ParentPos, ParentRev, Body, Attachments]
///
/// - `Deleted`: the atom `true` or `false`.
/// - `ParentPos`: the parent's generation, `0` for a first revision.
/// - `ParentRev`: `0` for a first revision; else the parent's hash as a binary: its 16 bytes when it is 32 hex
///   digits (`couch_doc:parse_revid`), its UTF-8 text otherwise.
/// - `Body`: the user's fields as jiffy decodes them (`JiffyTerm`), in the order received; `_id`, `_rev`,
///   `_attachments` and the other `_` fields are not part of it.
/// - `Attachments`: `{Name, ContentType, Md5}` binaries for each attachment of the new revision, in the *reverse*
///   of the document's attachment order (CouchDB folds the list with `lists:foldl`), `Md5` the 16 raw bytes of
///   the `md5-…` digest.
///
/// CouchDB takes `Md5` from the bytes it stores: for the types it compresses (`text/*`, JSON, JavaScript, XML)
/// that is the md5 of its gzip output. couchlite stores bytes as sent, so the store asks the server's
/// `AttachmentHashDigest` for that md5 (the server recomputes CouchDB's gzip of the stored bytes) and hashes it in
/// the attachment's place. A body the term reader refuses (beyond `JiffyTerm`'s bounds; CouchDB refuses
/// those bodies itself) is hashed as one binary of its bytes, still deterministic.
public enum RevisionHash {
    /// One attachment as the hash sees it.
    public struct Attachment: Sendable {
        public var name: String
        public var contentType: String
        /// The wire digest, `md5-<base64>`.
        public var digest: String

        public init(name: String, contentType: String, digest: String) {
            self.name = name
            self.contentType = contentType
            self.digest = digest
        }
    }

    /// Computes the hash part of a new rev id.
    /// - Parameters:
    ///   - parent: the revision being edited, nil for a first revision.
    ///   - deleted: the new revision is a deletion.
    ///   - body: the serialized JSON object of the user's fields.
    ///   - attachments: every attachment of the new revision, in the document's order.
    public static func compute(parent: RevID?, deleted: Bool, body: [UInt8], attachments: [Attachment]) -> String {
        let digest = Digest(.md5)
        digest.update(externalFormat(parent: parent, deleted: deleted, body: body, attachments: attachments))
        return digest.finalize().hexString
    }

    /// `term_to_binary([Deleted, ParentPos, ParentRev, Body, Attachments], [{minor_version, 1}])`.
    public static func externalFormat(parent: RevID?, deleted: Bool, body: [UInt8], attachments: [Attachment])
        -> [UInt8]
    {
        var out: [UInt8] = [131, 108, 0, 0, 0, 5]
        out.reserveCapacity(body.count + 64 + attachments.count * 64)
        ErlangTerm.bool(deleted).encode(into: &out)
        ErlangTerm.int(parent?.pos ?? 0).encode(into: &out)
        (parent.map { .binary(revBinary($0.hash)) } ?? ErlangTerm.int(0)).encode(into: &out)
        if !JiffyTerm.encode(body, into: &out) { ErlangTerm.binary(body).encode(into: &out) }
        let attachmentTerms = attachments.reversed().map { attachment in
            ErlangTerm.tuple([
                .binary(Array(attachment.name.utf8)), .binary(Array(attachment.contentType.utf8)),
                .binary(md5Bytes(attachment.digest)),
            ])
        }
        ErlangTerm.list(attachmentTerms).encode(into: &out)
        out.append(106)
        return out
    }

    /// `couch_doc:parse_revid`: 32 hex digits are the 16 bytes they spell; any other hash is its own text.
    static func revBinary(_ hash: String) -> [UInt8] {
        let text = Array(hash.utf8)
        return RevID.isHex32(text) ? (0..<16).map { RevID.hexByte(text, $0) } : text
    }

    /// The raw bytes of an `md5-<base64>` digest; any other digest (CouchDB always has an md5) as its text.
    static func md5Bytes(_ digest: String) -> [UInt8] {
        guard digest.hasPrefix("md5-"), let data = Data(base64Encoded: String(digest.dropFirst(4))) else {
            return Array(digest.utf8)
        }
        return Array(data)
    }
}
