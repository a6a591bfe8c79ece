import CouchWire
import Foundation
import QueryServer
import RevTree
import Synchronization

/// The CouchDB application: routes each request to its handler and turns every failure into a
/// CouchDB-style error. Shared by all connection threads; everything it holds is thread-safe.
final class App: Sendable {
    static let couchDBVersion = "3.4.3"
    static let version = "0.1.0"

    let store: Store
    let blobRegistry: BlobRegistry
    let serverUUID: String
    let log: Logger
    let options: Options
    let access: AccessControl
    /// Serves this app to the replicator's local endpoints over in-process socket pairs.
    let localServer: HTTPLocalServer
    /// Replications started by `_replicate` and `_replicator` documents.
    let replications = ReplicationJobs()
    /// The `_replicator` database's jobs, once `ServerProcess` has started following it.
    let replicatorDatabase = Mutex<ReplicatorDatabase?>(nil)
    /// The `Host` names answered: `options.allowedHosts`, widened by `answerOnly(hosts:)` once `receive` knows
    /// its addresses and port.
    private let allowedHosts: Mutex<HostAllowList>
    let compactions = Compactions()
    /// Request counters and times (`_node/_local/_stats`).
    let metrics = ServerMetrics()
    /// Bytes and connections of the network server (`ServerProcess` hands it to the HTTP engine).
    let traffic = HTTPTraffic()
    /// The photo gallery's thumbnail cache (Gallery/).
    let gallery: GalleryState
    /// View indexes and the engine that maps for them (Views/).
    let views: ViewIndexes
    /// Runs design functions (filters, `validate_doc_update`, views) in JavaScript worker processes.
    let queryServer: QueryServer
    /// Each database's validating design documents.
    let designFunctions = DesignFunctionCache()
    /// Told of every request refused for a full disk (`couchlite receive` shows it in its progress line).
    let onDiskFull = Mutex<(@Sendable () -> Void)?>(nil)

    init(
        store: Store, blobRegistry: BlobRegistry, serverUUID: String, options: Options, access: AccessControl,
        log: Logger
    ) {
        self.store = store
        self.access = access
        self.blobRegistry = blobRegistry
        self.serverUUID = serverUUID
        self.options = options
        self.log = log
        allowedHosts = Mutex(HostAllowList(options.allowedHosts))
        self.gallery = GalleryState(dataDir: options.dataDir)
        var limits = WorkerLimits()
        limits.heapBytes = options.jsHeapMiB * 1024 * 1024
        limits.addressSpaceBytes = max(limits.addressSpaceBytes, limits.heapBytes * 2 + 1024 * 1024 * 1024)
        queryServer = QueryServer(
            QueryServerConfiguration(
                maxWorkers: options.jsWorkers, timeout: .milliseconds(options.jsTimeoutMilliseconds), limits: limits)
        ) { message in log.info("design function log", ["message": message]) }
        views = ViewIndexes(directory: options.dataDir + "/views", engine: QueryServerViewEngine(server: queryServer))
        // The local server's handler reaches the app through a box filled below: `self` is not
        // usable until every stored property is set.
        let box = AppBox()
        localServer = HTTPLocalServer { head, body, writer in
            box.app?.handle(head, body, writer, trusted: UserContext.localReplicator)
        }
        box.app = self
    }

    /// The engine's entry point for every request.
    /// - Parameter trusted: The user an in-process connection (`localServer`) speaks for; nil for the
    ///   network, whose requests authenticate themselves.
    func handle(
        _ head: HTTPRequestHead, _ body: HTTPRequestBody, _ writer: HTTPResponseWriter, trusted: UserContext? = nil
    ) {
        let started = ContinuousClock.now
        let reply = Reply(writer: writer)
        if trusted == nil { metrics.requestStarted(method: head.method) }
        // In-process connections (`trusted`) name no host of ours; every network request must.
        guard trusted != nil || allowedHosts.withLock({ $0.allows(head.headers["Host"]) }) else {
            // Before CORS and authentication: a rebound name gets nothing from this server.
            log.info("host refused", ["client": head.remoteAddress ?? "-", "host": head.headers["Host"] ?? "-"])
            return reply.error(.badRequest("Host not allowed: this server does not answer to that name."))
        }
        applyCORS(head, reply)
        defer { UserContext.clearCurrent() }
        let target = databaseName(of: head).map { (name: $0, deletions: store.deletions(of: $0)) }
        var temporaryRequest: TemporaryAccounts.Request?
        do {
            let request = try Request(head: head, body: body)
            if try admit(request, reply, trusted: trusted) {
                temporaryRequest = access.authenticator.temporary.begin(
                    UserContext.current, method: request.method, segments: request.segments)
                try route(request, reply)
            }
        } catch let error as HTTPError {
            // The client went away or sent a bad body mid-request; answer if we still can.
            reply.error(CouchError(error))
        } catch {
            let couchError = clientError(for: error, head, target)
            reply.error(couchError, headers: errorHeaders(couchError, head))
        }
        temporaryRequest?.end(status: reply.status)
        let elapsed = ContinuousClock.now - started
        let ms = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
        if trusted == nil { metrics.requestFinished(status: reply.status, milliseconds: ms) }
        // Formatting the line costs more than serving a small document: skip it unless it is logged.
        guard log.level >= .info else { return }
        log.info(
            "request",
            [
                "client": head.remoteAddress ?? "-", "method": head.method, "path": head.target,
                "status": String(reply.status),
                "bytes": String(reply.bytesSent), "ms": String(Int(ms * 10) / 10) + "." + String(Int(ms * 10) % 10),
            ])
    }

    /// What the client is told about a failure. Details that name files or SQLite internals are logged,
    /// never sent; a request that raced `DELETE /db` (its database is gone now) is the 404 it would have
    /// got a moment later, not a 500.
    private func clientError(
        for error: any Error, _ head: HTTPRequestHead, _ target: (name: String, deletions: Int)?
    ) -> CouchError {
        let mapped = CouchError(unexpected: error)
        switch mapped {
        case .internalError(let detail), .unknownError(let detail):
            if let target, !store.exists(target.name) || store.deletions(of: target.name) != target.deletions {
                return .dbNotFound
            }
            log.error("request failed", ["error": detail, "method": head.method, "path": head.path])
        case .insufficientStorage:
            log.error("disk full", ["error": String(describing: error), "method": head.method, "path": head.path])
            onDiskFull.withLock { $0 }?()
        default:
            break
        }
        return mapped
    }

    /// The database a request addresses, if any (its first path segment, unless a server endpoint).
    private func databaseName(of head: HTTPRequestHead) -> String? {
        guard let raw = head.path.split(separator: "/").first, let name = PercentEncoding.decode(raw),
            !name.hasPrefix("_") || App.systemDatabases.contains(name)
        else { return nil }
        return name
    }

    /// Dispatches on the decoded path segments.
    private func route(_ request: Request, _ reply: Reply) throws {
        let segments = request.segments
        guard let first = segments.first else {
            if App.prefersHTML(request) { return try galleryWelcome(request, reply) }
            return try serverRoot(request, reply)
        }
        if first == "_photos" { return try gallery(request, reply) }
        if first.hasBytePrefix("_") && !App.systemDatabases.contains(first) {
            if first == "_scheduler" { return try scheduler(request, reply) }
            if first == "_node" { return try node(request, reply) }
            guard segments.count == 1 else { throw CouchError.notFound("missing") }
            switch first {
            case "_up": return try up(request, reply)
            case "_all_dbs": return try allDatabases(request, reply)
            case "_uuids": return try uuids(request, reply)
            case "_session": return try sessionEndpoint(request, reply)
            case "_replicate": return try replicate(request, reply)
            case "_active_tasks": return try activeTasks(request, reply)
            case "_membership": return try membership(request, reply)
            default: throw CouchError.notFound("missing")
            }
        }
        if first == App.usersDatabase, try usersRoute(request, reply) { return }
        if segments.count == 1 {
            try databaseRoot(first, request, reply)
            // A created or deleted database starts again from the default `_security`.
            if request.method == "PUT" || request.method == "DELETE" { access.security.reset(first) }
            // A deleted database's indexes go with it (a new one of the same name has another uuid anyway).
            if request.method == "DELETE" && reply.status == 200 { views.drop(first) }
            return
        }
        let database = try openDatabase(first)
        // Held for the whole request (a feed, an attachment stream, a write): the bound on open databases
        // never closes a database under its user.
        let lease = try database.lease()
        defer { lease.release() }
        let second = segments[1]
        switch second {
        case "_bulk_docs": return try bulkDocs(database, request, reply)
        case "_revs_diff": return try revsDiff(database, request, reply, missingRevsStyle: false)
        case "_missing_revs": return try revsDiff(database, request, reply, missingRevsStyle: true)
        case "_bulk_get": return try bulkGet(database, request, reply)
        case "_all_docs": return try allDocs(database, request, reply)
        case "_changes": return try changes(database, request, reply)
        case "_ensure_full_commit": return try ensureFullCommit(database, request, reply)
        case "_revs_limit": return try revsLimit(database, request, reply)
        case "_compact": return try compact(database, request, reply)
        case "_local":
            // couch_httpd_db: `/db/_local` with anything but exactly one more segment.
            guard segments.count == 3 else {
                throw CouchError.badRequest("_local documents do not accept attachments.")
            }
            return try localDocument(database, "_local/" + segments[2], request, reply)
        case "_design":
            guard segments.count >= 3 else { throw CouchError.notFound("missing") }
            let docID = "_design/" + segments[2]
            if segments.count == 3 { return try document(database, docID, request, reply) }
            if segments[3] == "_info" { return try designInfo(database, design: segments[2], request, reply) }
            if segments[3] == "_view" {
                guard segments.count == 5 else { throw CouchError.notFound("missing") }
                return try designView(database, design: segments[2], view: segments[4], request, reply)
            }
            if let reason = App.unsupportedDesignEndpoints[segments[3]] { throw CouchError.notImplemented(reason) }
            return try attachment(database, docID, segments[3...].joined(separator: "/"), request, reply)
        case "_security": return try securityObject(database, request, reply)
        case "_temp_view": throw CouchError.gone("Temporary views are not supported in CouchDB")
        case "_view_cleanup": return try viewCleanup(database, request, reply)
        case "_find", "_index", "_explain", "_design_docs", "_purge":
            throw CouchError.notImplemented("\(second) is not supported by couchlite.")
        default:
            // `_local%2Fx` and `_design%2Fx` arrive as one segment.
            if second.hasBytePrefix("_local/") {
                guard segments.count == 2 else {
                    throw CouchError.badRequest("_local documents do not accept attachments.")
                }
                return try localDocument(database, second, request, reply)
            }
            if second.hasBytePrefix("_design/") && segments.count == 2 {
                return try document(database, second, request, reply)
            }
            if second.hasBytePrefix("_") {
                throw CouchError.illegalDocID("Only reserved document ids may start with underscore.")
            }
            if segments.count == 2 { return try document(database, second, request, reply) }
            return try attachment(database, second, segments[2...].joined(separator: "/"), request, reply)
        }
    }

    /// From now on answers only requests whose `Host` is one of `hosts` or of `--allowed-hosts` (see
    /// `HostAllowList`): `receive` calls it with the addresses it printed, against DNS rebinding.
    func answerOnly(hosts: [String]) {
        let list = HostAllowList(options.allowedHosts + hosts)
        allowedHosts.withLock { $0 = list }
    }

    /// Design-document endpoints couchlite does not serve (CouchDB 3 deprecated them; they render HTML or
    /// rewrite URLs rather than replicate data), with the reason given in their 501.
    static let unsupportedDesignEndpoints: [String: String] = [
        "_show": "couchlite does not run _show functions (deprecated in CouchDB 3): read the document and render it "
            + "in the client.",
        "_list": "couchlite does not run _list functions (deprecated in CouchDB 3): query the view and render the "
            + "rows in the client.",
        "_update": "couchlite does not run _update functions (deprecated in CouchDB 3): write the document with PUT "
            + "or _bulk_docs (validate_doc_update still applies).",
        "_rewrite": "couchlite does not run _rewrite rules (deprecated in CouchDB 3): address the database directly.",
    ]

    /// Databases whose names may start with an underscore, as in CouchDB.
    static let systemDatabases: Set<String> = ["_users", "_replicator", "_global_changes"]

    /// Opens an existing database or fails with 404 `Database does not exist.`
    func openDatabase(_ name: String) throws -> Database {
        do {
            return try store.open(name)
        } catch {
            throw CouchError(error)
        }
    }
}

/// Throws 405 unless the request's method is one of `allowed`.
func require(_ request: Request, _ allowed: String...) throws(CouchError) {
    guard allowed.contains(request.method) else {
        throw .methodNotAllowed(allowed.joined(separator: ","))
    }
}
