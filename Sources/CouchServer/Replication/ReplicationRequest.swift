import CouchStore
import CouchWire
import Foundation
import Replicator

/// A `_replicate` body (or a `_replicator` document) turned into endpoints and options, as CouchDB
/// reads it: `source`/`target` as a URL, `{"url","headers","auth"}`, or (couchlite only) the name of a
/// local database; `continuous`, `create_target`, `doc_ids`, `filter: "_selector"` with `selector`, `filter:
/// "ddoc/name"` (a JavaScript filter of the source) with `query_params`, `since_seq`, `worker_batch_size`,
/// `checkpoint_interval` (ms), `cancel`. An `https://` endpoint object may carry couchlite's certificate options,
/// which CouchDB has only server-wide (`[replicator] verify_ssl_certificates`, `ssl_trusted_certificates_file`):
/// `couchlite_pin`, `couchlite_cacert`, `couchlite_insecure` (see `PeerTrust`); a URL's `#sha256=` fragment pins
/// it too.
struct ReplicationRequest {
    var source: Endpoint
    var target: Endpoint
    package var options = ReplicationOptions()
    var cancel = false

    /// - Parameters:
    ///   - identity: The replicator's identity (the server's uuid).
    ///   - log: Told of endpoints whose certificates are not checked.
    ///   - local: A database of this server as an endpoint.
    init(_ body: JSONObject, identity: String, log: Logger, local: (String) -> Endpoint) throws(CouchError) {
        guard let source = body["source"], !source.isNull else { throw .badRequest("Missing `source` field") }
        guard let target = body["target"], !target.isNull else { throw .badRequest("Missing `target` field") }
        self.source = try Self.endpoint(source, log: log, local: local)
        self.target = try Self.endpoint(target, log: log, local: local)
        options.replicatorIdentity = identity
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
            guard let name = filter.stringValue else { throw .badRequest("`filter` must be a string") }
            if name != "_selector" {
                // A JavaScript filter of the source (`ddoc/name`); its code is fetched when the job is made.
                guard name.split(separator: "/", omittingEmptySubsequences: false).count == 2,
                    !name.hasPrefix("/"), !name.hasSuffix("/")
                else { throw .badRequest("Invalid filter. Must match `ddocname/filtername`.") }
                options.filter = name
            }
        }
        if let params = body["query_params"], !params.isNull {
            guard let object = params.objectValue else { throw .badRequest("`query_params` must be a JSON object") }
            options.queryParams = object
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
    package static func endpoint(_ value: JSON, log: Logger, local: (String) -> Endpoint) throws(CouchError) -> Endpoint
    {
        var url: String
        var headers = HTTPHeaders()
        var trust = PeerTrust()
        switch value {
        case .string(let text): url = text
        case .object(let object):
            trust = try Self.trust(object)
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
            let endpoint: Endpoint
            do {
                endpoint = try Endpoint.remote(url: url, headers: headers, trust: trust)
            } catch {
                throw .badRequest(error.description)
            }
            if let trust = endpoint.trust, trust.verifiesNothing {
                log.warning(PeerTrust.insecureWarning(endpoint.client.peerName))
            }
            return endpoint
        }
        guard trust.isDefault else { throw .badRequest("Certificate options need an https:// URL, not \(url)") }
        return local(url)
    }

    /// The fields that name a file of the server's (only server admins may have them read).
    static let serverFileFields = ["couchlite_cacert"]

    /// `couchlite_pin` (a SHA-256 fingerprint), `couchlite_cacert` (a PEM file on the server) and
    /// `couchlite_insecure` of an endpoint object.
    private static func trust(_ object: JSONObject) throws(CouchError) -> PeerTrust {
        var trust = PeerTrust()
        if let pin = object["couchlite_pin"], !pin.isNull {
            guard let text = pin.stringValue else { throw .badRequest("`couchlite_pin` must be a string") }
            do {
                trust.pin = try PeerTrust.parsePin(text)
            } catch {
                throw .badRequest("`couchlite_pin`: \(error.description)")
            }
        }
        if let file = object["couchlite_cacert"], !file.isNull {
            guard let path = file.stringValue, !path.isEmpty else {
                throw .badRequest("`couchlite_cacert` must be the path of a PEM file")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw .badRequest("`couchlite_cacert`: cannot read \(path)")
            }
            trust.caFile = path
        }
        if let insecure = object["couchlite_insecure"], !insecure.isNull {
            guard let flag = insecure.boolValue else { throw .badRequest("`couchlite_insecure` must be a boolean") }
            trust.insecure = flag
        }
        return trust
    }
}

extension App {
    /// Leases the databases of this server that `replication` reads or writes (`Store.leaseLocalDatabases`).
    func holdLocalDatabases(of replication: Replication) -> [DatabaseLease] {
        store.leaseLocalDatabases(of: replication)
    }

    /// A database of this server as a replication endpoint, served in-process as a server admin.
    package func localEndpoint(_ name: String) -> Endpoint {
        localServer.replicationEndpoint(name, identity: serverUUID)
    }
}

extension Store {
    /// Leases the databases of this store that `replication` reads or writes, so the bound on open databases
    /// leaves them open while it runs (one not there yet, a target it will create, is not held).
    func leaseLocalDatabases(of replication: Replication) -> [DatabaseLease] {
        [replication.source, replication.target].compactMap { endpoint in
            guard case .local(let name, _) = endpoint.client.peer else { return nil }
            return try? open(name).lease()
        }
    }
}

extension HTTPLocalServer {
    /// A database this server serves as a replication endpoint, reached in-process (as a server admin).
    /// - Parameter identity: The server's uuid, which names the endpoint in replication ids.
    func replicationEndpoint(_ name: String, identity: String) -> Endpoint {
        Endpoint.local(name: name, identity: identity) { self.connect() }
    }
}

extension UserContext {
    /// Who the replicator's in-process requests speak for: only server admins start replications.
    static let localReplicator = UserContext(name: nil, roles: [UserContext.adminRole], handler: "local")
}
