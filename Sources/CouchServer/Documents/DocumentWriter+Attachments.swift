import CouchCrypto
import CouchStore
import CouchWire
import Foundation

/// Attachment bytes that arrived as parts of a `multipart/related` body, already stored as blobs,
/// by attachment name.
package struct FollowedAttachments {
    struct Part {
        let key: String
        let md5: [UInt8]
        /// Computed only when the JSON announced a `sha1-` digest.
        let sha1: [UInt8]?
        let length: Int
    }
    /// Keyed by bytes: two names that merely look alike are two attachments, as in CouchDB.
    var parts: [ExactName: Part] = [:]
}

/// Turning `_attachments` JSON into stored blobs and `AttachmentRef`s.
extension DocumentWriter {
    /// CouchDB refuses attachment names starting with `_` (chttpd_db 2307) and empty ones.
    package static func validateAttachmentName(_ name: String) throws(CouchError) {
        guard !name.isEmpty else { throw .badRequest("Attachment name can't be empty") }
        if name.hasBytePrefix("_") {
            throw .badRequest("Attachment name '\(name)' starts with prohibited character '_'")
        }
    }

    /// Converts each `_attachments` entry: stubs stay stubs (the store resolves them), inline
    /// `data` and multipart `follows` bytes become blobs.
    ///
    /// Bytes are stored as they arrive. CouchDB gzips `text/*`, JSON, JavaScript and XML data it
    /// receives unencoded and then reports the md5 of the *compressed* bytes as the digest; we do
    /// not: the digest is the md5 of what is stored, which is what every peer checks
    /// (`couch_util:check_md5` compares a `follows` part with its identity md5, and a gzip part
    /// with the md5 of the gzip bytes, both of which match what we send), and no client predicts
    /// CouchDB's compressed digests. Only the rev hash needs CouchDB's md5, and gets it from
    /// `CouchDBAttachmentDigest`. Attachments that arrive gzip-encoded stay gzip-encoded.
    func ingestAttachments(
        _ database: Database, _ attachments: JSONObject?, newRevPos: Int, replicated: Bool,
        followed: FollowedAttachments?
    ) throws -> [AttachmentRef] {
        guard let attachments else { return [] }
        var refs: [AttachmentRef] = []
        for (name, value) in attachments {
            try DocumentWriter.validateAttachmentName(name)
            guard case .object(let entry) = value else {
                throw CouchError.badRequest("Attachment \(name) must be a JSON object")
            }
            let contentType = entry["content_type"]?.stringValue ?? "application/octet-stream"
            let givenRevpos = entry["revpos"]?.intValue
            // A replicated revision keeps the revpos it was sent with, 0 when it names none
            // (`couch_att:inline_from_json`/`follow_from_json`); an edit's new data gets the new generation.
            let revpos = replicated ? (givenRevpos ?? 0) : newRevPos
            if entry["stub"]?.boolValue == true {
                refs.append(.stub(name: name, revpos: givenRevpos, digest: entry["digest"]?.stringValue))
                continue
            }
            if let data = entry["data"] {
                guard let text = data.stringValue, let bytes = Base64.decode(text) else {
                    throw CouchError.badRequest("Invalid attachment data for \(name)")
                }
                let writer = try blobs.makeWriter(database)
                try writer.write(bytes)
                let stored = try blobs.commit(writer)
                refs.append(
                    .stored(
                        AttachmentInfo(
                            name: name, contentType: contentType, digest: "md5-" + DocumentWriter.base64(stored.md5),
                            length: stored.length, revpos: revpos, encoding: nil, encodedLength: nil,
                            blobKey: stored.key)))
                continue
            }
            if entry["follows"]?.boolValue == true {
                guard let part = followed?.parts[ExactName(name)] else {
                    throw CouchError.badRequest("Attachment \(name) follows but no part was sent for it")
                }
                let encoding = try DocumentWriter.followedEncoding(entry["encoding"], name: name)
                let digest = try DocumentWriter.followedDigest(entry["digest"]?.stringValue, part: part, name: name)
                // A gzip part's `length` is its decoded size: checked by decoding (counted, not kept), so no reader
                // of it (the `receive` exporter, `attachments=true`) is ever made to inflate more than declared.
                var length = part.length
                if encoding != nil {
                    let declared = entry["length"]?.intValue
                    if let declared, declared < 0 || declared > Limits.gzipIdentityBytes {
                        throw CouchError.badRequest("Attachment \(name) has an invalid length \(declared)")
                    }
                    do {
                        let limit = declared ?? Limits.gzipIdentityBytes
                        length = try blobs.gzipIdentityLength(
                            database, key: part.key, limit: limit,
                            tooLarge: "Attachment \(name) decodes to more than \(limit) bytes",
                            invalid: "Attachment \(name) is not valid gzip")
                    } catch CouchError.tooLarge where declared != nil {
                        length = -1
                    }
                    if let declared, declared != length {
                        throw CouchError.badRequest(
                            "Attachment \(name) declares length \(declared) but decodes to "
                                + (length < 0 ? "more" : "\(length) bytes"))
                    }
                }
                refs.append(
                    .stored(
                        AttachmentInfo(
                            name: name, contentType: contentType, digest: digest,
                            length: length, revpos: revpos,
                            encoding: encoding, encodedLength: encoding == nil ? nil : part.length,
                            blobKey: part.key)))
                continue
            }
            throw CouchError.badRequest("Attachment \(name) has no data, stub or follows")
        }
        return refs
    }

    /// The `encoding` of a `follows` attachment: gzip, or none (`identity`, or absent). CouchDB turns the name into
    /// an existing atom and fails on any other; we refuse it (400), so no reader meets an encoding it cannot
    /// decode. Inline `data` has no encoding: CouchDB ignores one sent with it, and so do we.
    static func followedEncoding(_ value: JSON?, name: String) throws(CouchError) -> String? {
        guard let value, value != .null else { return nil }
        switch value.stringValue {
        case "gzip": return "gzip"
        case "identity": return nil
        default: throw .badRequest("Attachment \(name) has an unsupported encoding: only gzip and identity are")
        }
    }

    /// Inline `data` is trusted over any digest sent with it (`couch_att:inline_from_json` ignores
    /// it and the md5 of the bytes is stored). Multipart `follows` bytes must match an `md5-`
    /// digest (`couch_util:check_md5`). A `sha1-` digest (Couchbase Lite 1.x sends one with every multipart
    /// PUT) is checked too, a couchlite-only defence (CouchDB ignores it), and then, as CouchDB does, the md5 of
    /// the bytes is what is stored and reported: the recorded CBL push (conformance/transcripts/cbl-1.4.4-push.jsonl)
    /// shows CouchDB answering `md5-…` for those attachments.
    static func followedDigest(_ given: String?, part: FollowedAttachments.Part, name: String) throws(CouchError)
        -> String
    {
        let md5 = "md5-" + base64(part.md5)
        guard let given else { return md5 }
        if given.hasPrefix("md5-") {
            guard given == md5 else {
                throw .contentMD5Mismatch
            }
            return given
        }
        if given.hasPrefix("sha1-") {
            guard let sha1 = part.sha1, given == "sha1-" + base64(sha1) else {
                throw .badRequest("Attachment \(name) does not match its sha1 digest")
            }
        }
        return md5
    }

    /// The blob key (lowercase hex md5) an `md5-<base64>` digest names, or nil for any other digest.
    static func blobKey(md5Digest digest: String?) -> String? {
        guard let digest, digest.hasPrefix("md5-"), let raw = Base64.decode(String(digest.dropFirst(4))),
            raw.count == 16
        else { return nil }
        return raw.hexString
    }

    package static func base64(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        Base64.encode(bytes, into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
