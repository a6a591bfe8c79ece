import CouchWire
import Foundation
import Replicator
import RevTree

/// A `_replicate` body (or a `_replicator` document) turned into endpoints and options, as CouchDB
/// reads it: `source`/`target` as a URL, `{"url","headers","auth"}`, or (couchlite only) the name of a
/// local database; `continuous`, `create_target`, `doc_ids`, `filter: "_selector"` with `selector`,
/// `since_seq`, `worker_batch_size`, `checkpoint_interval` (ms), `cancel`.
struct ReplicationRequest {
    var source: Endpoint
    var target: Endpoint
    var options = ReplicationOptions()
    var cancel = false

    init(_ body: JSONObject, app: App) throws(CouchError) {
        guard let source = body["source"], !source.isNull else { throw .badRequest("Missing `source` field") }
        guard let target = body["target"], !target.isNull else { throw .badRequest("Missing `target` field") }
        self.source = try Self.endpoint(source, app: app)
        self.target = try Self.endpoint(target, app: app)
        options.replicatorIdentity = app.serverUUID
        options.continuous = try Self.bool(body, "continuous")
        options.createTarget = try Self.bool(body, "create_target")
        cancel = try Self.bool(body, "cancel")
        if let ids = body["doc_ids"], !ids.isNull {
            guard let list = ids.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                throw .badRequest("`doc_ids` field must be a list")
            }
            options.docIDs = list.compactMap(\.stringValue)
        }
        if let filter = body["filter"], !filter.isNull {
            guard filter.stringValue == "_selector" else {
                throw .badRequest("couchlite replicates with `filter: \"_selector\"` only (no JavaScript filters)")
            }
        }
        if let selector = body["selector"], !selector.isNull {
            guard selector.objectValue != nil else { throw .badRequest("`selector` must be a JSON object") }
            options.selector = selector
        }
        if let since = body["since_seq"], !since.isNull { options.sinceSeq = since }
        if let size = body["worker_batch_size"]?.intValue {
            guard size > 0 else { throw .badRequest("`worker_batch_size` must be a positive integer") }
            options.batchSize = size
        }
        if let interval = body["checkpoint_interval"]?.intValue {
            guard interval > 0 else { throw .badRequest("`checkpoint_interval` must be a positive integer") }
            options.checkpointInterval = .milliseconds(interval)
        }
        if let retries = body["retries_per_request"]?.intValue, retries >= 0 { options.retries = retries }
        // CouchDB's `worker_processes`: documents with attachments moved at the same time.
        if let workers = body["worker_processes"]?.intValue, workers > 0 { options.connections = min(workers, 16) }
        if body["use_bulk_get"]?.boolValue == false { options.useBulkGet = false }
    }

    private static func bool(_ body: JSONObject, _ name: String) throws(CouchError) -> Bool {
        guard let value = body[name], !value.isNull else { return false }
        guard let flag = value.boolValue else { throw .badRequest("`\(name)` must be a boolean") }
        return flag
    }

    /// One endpoint: a URL string, `{"url":…,"headers":{…},"auth":{"basic":{…}}}`, or a local name.
    static func endpoint(_ value: JSON, app: App) throws(CouchError) -> Endpoint {
        var url: String
        var headers = HTTPHeaders()
        switch value {
        case .string(let text): url = text
        case .object(let object):
            guard let text = object["url"]?.stringValue else { throw .badRequest("Endpoint objects need a `url`") }
            url = text
            for (name, header) in object["headers"]?.objectValue ?? JSONObject() {
                guard let text = header.stringValue else { throw .badRequest("Header values must be strings") }
                headers.add(name, text)
            }
            if let basic = object["auth"]?["basic"], let user = basic["username"]?.stringValue {
                let password = basic["password"]?.stringValue ?? ""
                headers.set("Authorization", "Basic " + Data("\(user):\(password)".utf8).base64EncodedString())
            }
        default: throw .badRequest("`source` and `target` must be URLs or objects with a `url`")
        }
        if Endpoint.isURL(url) {
            do {
                return try Endpoint.remote(url: url, headers: headers)
            } catch {
                throw .badRequest(error.description)
            }
        }
        return app.localEndpoint(url)
    }
}

extension App {
    /// Leases the databases of this server that `replication` reads or writes, so the bound on open databases
    /// leaves them open while it runs (one not there yet, a target it will create, is not held).
    func holdLocalDatabases(of replication: Replication) -> [DatabaseLease] {
        [replication.source, replication.target].compactMap { endpoint in
            guard case .local(let name, _) = endpoint.client.peer else { return nil }
            return try? store.open(name).lease()
        }
    }

    /// A database of this server as a replication endpoint, served in-process as a server admin.
    func localEndpoint(_ name: String) -> Endpoint {
        let server = localServer
        return Endpoint.local(name: name, identity: serverUUID) { server.connect() }
    }
}

extension UserContext {
    /// Who the replicator's in-process requests speak for: only server admins start replications.
    static let localReplicator = UserContext(name: nil, roles: [UserContext.adminRole], handler: "local")
}

/// Lets the local server's handler reach the app that owns it.
final class AppBox: @unchecked Sendable {
    weak var app: App?
}
