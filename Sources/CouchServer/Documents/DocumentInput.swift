import CouchWire
import RevTree

/// A document as a client sent it, split into CouchDB's special `_` members and the user's body.
package struct DocumentInput {
    var id: String?
    var rev: RevID?
    /// `_revisions` as a path, leaf first (`start-0`, `start-1`, …).
    var revisions: [RevID]?
    package var deleted = false
    /// The user's fields, in the order sent.
    var body = JSONObject()
    /// The `_attachments` member, still as JSON.
    var attachments: JSONObject?

    /// Special members CouchDB accepts and ignores on input (they are computed on output).
    private static let ignoredSpecials: Set<String> = [
        "_revs_info", "_conflicts", "_deleted_conflicts", "_local_seq",
    ]

    /// Special members CouchDB keeps as ordinary body fields (`couch_doc:transfer_fields`): the replication
    /// scheduler's state in `_replicator` documents, and `_access` for per-document access control.
    private static let keptSpecials: Set<String> = [
        "_replication_id", "_replication_state", "_replication_state_time", "_replication_state_reason",
        "_replication_stats", "_access",
    ]

    /// Splits a JSON document.
    /// - Throws: 400 for a non-object, a bad `_id`, `_rev` or `_revisions`, or an unknown `_` member.
    /// - Parameter local: a `_local` document, whose `_revisions` (the CouchDB replicator sends
    ///   `{"start":0,"ids":["N"]}`) only restates its `0-N` rev.
    package init(_ json: JSON, local: Bool = false) throws(CouchError) {
        guard case .object(let object) = json else { throw .notAnObject }
        for (key, value) in object {
            guard key.hasBytePrefix("_") else {
                body[key] = value
                continue
            }
            switch key {
            case "_id":
                guard let id = value.stringValue else { throw .illegalDocID("Document id must be a string") }
                self.id = id
            case "_rev":
                guard let text = value.stringValue else { throw .invalidRev }
                rev = try DocumentInput.parseRev(text)
            case "_deleted":
                deleted = value.boolValue ?? false
            case "_revisions" where local:
                if let start = value["start"]?.intValue, start == 0, let first = value["ids"]?[0]?.stringValue,
                    rev == nil
                {
                    rev = try DocumentInput.parseRev("0-\(first)")
                }
            case "_revisions":
                revisions = try DocumentInput.parseRevisions(value)
            case "_attachments":
                guard case .object(let atts) = value else {
                    throw .badRequest("_attachments must be a JSON object")
                }
                attachments = atts
            default:
                if DocumentInput.ignoredSpecials.contains(key) { continue }
                if DocumentInput.keptSpecials.contains(key) {
                    body[key] = value
                    continue
                }
                throw .docValidation("Bad special document member: \(key)")
            }
        }
        // `_revisions` wins over a `_rev` that disagrees with it, wherever each stands in the object, as in
        // CouchDB (PouchDB's replicator sends such documents).
        if !local, let first = revisions?.first { rev = first }
    }

    package static func parseRev(_ text: String) throws(CouchError) -> RevID {
        do {
            return try RevID(parsing: text)
        } catch {
            throw .invalidRev
        }
    }

    /// `{"start": N, "ids": [h0, h1, …]}` → `[N-h0, (N-1)-h1, …]` (validated by `RevID.path`).
    static func parseRevisions(_ value: JSON) throws(CouchError) -> [RevID] {
        guard let start = value["start"]?.intValue, let ids = value["ids"]?.arrayValue else {
            throw .badRequest("_revisions must have an integer start and an array of ids")
        }
        var hashes: [String] = []
        hashes.reserveCapacity(ids.count)
        for id in ids {
            guard let hash = id.stringValue else { throw .invalidRev }
            hashes.append(hash)
        }
        do {
            return try RevID.path(start: start, ids: hashes)
        } catch {
            switch error {
            case .invalidRevFormat: throw .invalidRev
            case .invalidHexRevID: throw .docValidation("RevId isn't a valid hexadecimal")
            case .invalidRevisions(let reason): throw .badRequest(reason)
            case .pathTooLong(let count):
                throw .badRequest("_revisions has \(count) ids, more than \(RevTreeLimits.maxPathLength)")
            }
        }
    }

    /// The path to merge for a replicated (`new_edits=false`) write.
    func replicatedPath() throws(CouchError) -> [RevID] {
        if let revisions { return revisions }
        if let rev { return [rev] }
        throw .badRequest("Document rev is required when new_edits is false")
    }

    /// The serialized user body the store keeps.
    var bodyBytes: [UInt8] { JSON.object(body).serialized() }
}

/// Document id rules of CouchDB (`couch_doc:validate_docid`).
package enum DocumentID {
    static let maxBytes = 8 * 1024

    package static func validate(_ id: String) throws(CouchError) {
        guard !id.isEmpty else { throw .illegalDocID("Document id must not be empty") }
        guard id.utf8.count <= maxBytes else { throw .illegalDocID("Document id is too long") }
        if id.hasBytePrefix("_") {
            let reserved = ["_design/", "_local/"]
            guard reserved.contains(where: { id.hasBytePrefix($0) && id.utf8.count > $0.utf8.count }) else {
                throw .illegalDocID("Only reserved document ids may start with underscore.")
            }
        }
    }
}
