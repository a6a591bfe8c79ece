import CouchStore
import CouchWire
import RevTree

/// What to include when a stored revision is turned back into a JSON document
/// (`couch_doc:to_json_obj`: `_id`, `_rev`, body, `_deleted`, `_revisions`, meta, `_attachments`).
struct RenderOptions {
    var revs = false
    var revsInfo = false
    var conflicts = false
    var deletedConflicts = false
    var localSeq = false
    /// Inline attachment data as base64 (`attachments=true`).
    var attachments = false
    /// With `attachments`, only data newer than these revisions is inlined (`atts_since`).
    var attsSince: [RevID]?
    /// Show `encoding`/`encoded_length` for compressed attachments.
    var attEncodingInfo = false
    /// Mark attachments `follows: true` for a multipart response instead of inlining them.
    var follows = false

    init() {}

    /// Reads the document query parameters as CouchDB's `chttpd_db:parse_doc_query` does: each option is on
    /// when some value of it is exactly `true`; any other value (`True`, `1`, `yes`, `false`) is ignored, so
    /// clients that pass their language's booleans through still work. `meta` means `revs_info`, `conflicts` and
    /// `deleted_conflicts` (not `local_seq`).
    init(_ query: QueryParameters) throws(CouchError) {
        revs = query.isExactlyTrue("revs")
        revsInfo = query.isExactlyTrue("revs_info")
        conflicts = query.isExactlyTrue("conflicts")
        deletedConflicts = query.isExactlyTrue("deleted_conflicts")
        localSeq = query.isExactlyTrue("local_seq")
        if query.isExactlyTrue("meta") {
            conflicts = true
            deletedConflicts = true
            revsInfo = true
        }
        attachments = query.isExactlyTrue("attachments")
        attEncodingInfo = query.isExactlyTrue("att_encoding_info")
        if let since = try query.json("atts_since") {
            attsSince = try RenderOptions.revList(since)
        }
    }

    /// Leaves out the meta fields (`_revs_info`, `_conflicts`, `_deleted_conflicts`, `_local_seq`), as CouchDB does
    /// for a revision read by `rev=` (without `latest`) or `open_revs`: only `couch_db:open_doc` fills a
    /// document's meta, `open_doc_revs` does not, so those answers never show it whatever the query asks.
    mutating func dropMeta() {
        revsInfo = false
        conflicts = false
        deletedConflicts = false
        localSeq = false
    }

    static func revList(_ json: JSON) throws(CouchError) -> [RevID] {
        guard let array = json.arrayValue else { throw .badRequest("atts_since must be a JSON array of revs") }
        var revs: [RevID] = []
        for item in array {
            guard let text = item.stringValue else { throw .invalidRev }
            revs.append(try DocumentInput.parseRev(text))
        }
        return revs
    }

    /// Whether attachment data with this `revpos` is sent rather than stubbed (`couch_db` 333-345).
    func sendsData(revpos: Int) -> Bool {
        guard attachments || follows else { return false }
        guard let since = attsSince, !since.isEmpty else { return true }
        let newestKnown = since.map(\.pos).max() ?? 0
        return revpos > newestKnown
    }
}

/// Builds JSON documents from stored revisions.
struct DocumentRenderer {
    let id: String
    package let info: DocumentInfo?
    package let options: RenderOptions
    /// Streams inline `data` (`attachments=true`) into the response in place of the placeholder each
    /// `data` member holds; nil when no data is inlined (stubs, `follows`).
    let inline: InlineAttachments?

    /// The document as an ordered JSON object.
    func render(_ revision: StoredRevision) throws -> JSONObject {
        var doc = JSONObject()
        doc["_id"] = .string(id)
        doc["_rev"] = .string(revision.rev.description)
        if let body = revision.body, !body.isEmpty, case .object(let fields) = try JSON.parse(body) {
            for (key, value) in fields { doc[key] = value }
        }
        if revision.deleted { doc["_deleted"] = true }
        if options.revs {
            doc["_revisions"] = [
                "start": .number(JSONNumber(revision.rev.pos)),
                "ids": .array(revision.history.map { .string($0.hash) }),
            ]
        }
        if options.revsInfo, let info {
            doc["_revs_info"] = .array(
                info.tree.revsInfo(of: revision.rev).map { entry in
                    .object(
                        JSONObject([
                            ("rev", .string(entry.rev.description)), ("status", .string(entry.status.rawValue)),
                        ]))
                })
        }
        if let info {
            let others = info.leaves.filter { $0.rev != revision.rev }
            if options.conflicts {
                let live = others.filter { !$0.deleted }.map { JSON.string($0.rev.description) }
                if !live.isEmpty { doc["_conflicts"] = .array(live) }
            }
            if options.deletedConflicts {
                let dead = others.filter { $0.deleted }.map { JSON.string($0.rev.description) }
                if !dead.isEmpty { doc["_deleted_conflicts"] = .array(dead) }
            }
        }
        if options.localSeq { doc["_local_seq"] = .number(JSONNumber(revision.localSeq)) }
        if !revision.attachments.isEmpty {
            var atts = JSONObject()
            for att in revision.attachments { atts[att.name] = .object(try renderAttachment(att)) }
            doc["_attachments"] = .object(atts)
        }
        return doc
    }

    /// One `_attachments` entry (`couch_att:to_json`).
    func renderAttachment(_ att: AttachmentInfo) throws -> JSONObject {
        var entry = JSONObject()
        entry["content_type"] = .string(att.contentType)
        entry["revpos"] = .number(JSONNumber(att.revpos))
        entry["digest"] = .string(att.digest)
        if !options.sendsData(revpos: att.revpos) {
            entry["length"] = .number(JSONNumber(att.length))
            entry["stub"] = true
        } else if options.follows {
            entry["length"] = .number(JSONNumber(att.length))
            entry["follows"] = true
        } else if let inline {
            entry["data"] = .string(inline.placeholder(for: att))
        }
        if options.attEncodingInfo || options.follows, let encoding = att.encoding,
            let encodedLength = att.encodedLength
        {
            entry["encoding"] = .string(encoding)
            entry["encoded_length"] = .number(JSONNumber(encodedLength))
        }
        return entry
    }
}
