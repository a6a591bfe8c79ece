import CouchStore
import CouchWire
import Foundation
import Replicator

/// What CouchDB's `_replicator` database refuses at write (`couch_replicator_docs:before_doc_update`): a document
/// that cannot be read as a replication is a 403 `forbidden` with CouchDB's reason, not stored to fail later —
/// a missing endpoint, a URL without a host or that does not parse, `doc_ids`/`selector`/`query_params` and the
/// boolean options of the wrong type, a filter that is not `ddoc/name`. couchlite's own extensions (a local
/// database's name, certificate options) pass, and are checked when the job is made. Deletions, design and
/// `_local` documents, documents already `failed`, and the replicator's own writes of a job's outcome pass, as in
/// CouchDB.
enum ReplicatorDocumentCheck {
    /// Why `write` is refused, if it is.
    static func refusal(_ write: RevisionWrite) -> CouchError? {
        guard !write.deleted, !write.docID.hasBytePrefix("_design/"), !write.docID.hasBytePrefix("_local/"),
            case .object(let doc)? = try? JSON.parse(write.body),
            doc["_replication_state"]?.stringValue != "failed"
        else { return nil }
        return reason(doc).map(CouchError.forbidden)
    }

    /// CouchDB's reason for refusing `doc`, or nil when it reads as a replication.
    static func reason(_ doc: JSONObject) -> String? {
        for field in ["source", "target"] {
            guard let value = doc[field], !value.isNull else { return "Missing replicator database" }
            if let reason = endpointReason(value) { return reason }
        }
        for field in ["continuous", "create_target", "cancel"] {
            if let value = doc[field], !value.isNull, value.boolValue == nil {
                return badRequest("parameter `\(field)` must be a boolean")
            }
        }
        if let ids = doc["doc_ids"], !ids.isNull, ids.arrayValue == nil {
            return badRequest("parameter `doc_ids` must be an array")
        }
        if let selector = doc["selector"], !selector.isNull, selector.objectValue == nil {
            return badRequest("parameter `selector` must be a JSON object")
        }
        if let params = doc["query_params"], !params.isNull, params.objectValue == nil {
            return badRequest("parameter `query_params` must be an object")
        }
        if let filter = doc["filter"]?.stringValue, !filter.hasPrefix("_") {
            let parts = filter.split(separator: "/", omittingEmptySubsequences: false)
            if parts.count != 2 || parts.contains(where: \.isEmpty) {
                return "Invalid filter. Must match `ddocname/filtername`."
            }
        }
        return nil
    }

    /// An endpoint CouchDB cannot read: a URL that does not parse or names no host.
    private static func endpointReason(_ value: JSON) -> String? {
        let url: String
        switch value {
        case .string(let text): url = text
        case .object(let object):
            guard let text = object["url"]?.stringValue else { return "endpoint has an invalid url" }
            url = text
        default: return "{error,function_clause}"
        }
        guard Endpoint.isURL(url) else { return nil }  // couchlite: a local database's name
        guard let parts = URLComponents(string: url), let host = parts.host, !host.isEmpty else {
            return "endpoint has an invalid url"
        }
        return nil
    }

    /// CouchDB's rendering of a parse error thrown as `bad_request`.
    private static func badRequest(_ reason: String) -> String {
        "{throw,{bad_request,<<\"\(reason)\">>}}"
    }
}
