import Callbacks
import CouchStore
import CouchWire
import Foundation
import QueryServer
import Synchronization

/// The CouchDB application, as its composition root: it builds the services and the handler groups, and `handle`
/// runs each request through the Host check, CORS, authentication, the route table (`Router`, `RequestAuthorizer`)
/// and the row's handler, turning every failure into a CouchDB-style error. Shared by all connection threads;
/// everything it holds is thread-safe.
package final class App: Sendable {
    static let couchDBVersion = "3.4.3"
    static let version = "0.1.0"
    /// The node name `_membership`, `_active_tasks` and `_scheduler` give (a single-node CouchDB's shape).
    static let nodeName = "couchlite@127.0.0.1"

    // MARK: Services

    package let store: Store
    /// The data dir's lock, held for the app's life (nil for tests' apps over their own temporary dirs).
    package let dataDirLock: DataDirLock?
    package let blobRegistry: BlobRegistry
    package let serverUUID: String
    let log: Logger
    package let options: Options
    package let access: AccessControl
    /// Serves this app to the replicator's local endpoints over in-process socket pairs.
    let localServer: HTTPLocalServer
    /// Replications started by `_replicate` and `_replicator` documents.
    let replications = ReplicationJobs()
    /// The `_replicator` database's jobs, once `ServerProcess` has started following it.
    let replicatorDatabase = ReplicatorDatabaseSlot()
    /// `[replicator] max_jobs`, `interval`, `max_churn`: what the `_replicator` scheduler reads on each pass.
    let replicatorSettings: ReplicatorSettings
    /// The `Host` names answered: `options.allowedHosts`, widened by `answerOnly(hosts:)` once `receive` knows
    /// its addresses and port.
    private let allowedHosts: Mutex<HostAllowList>
    let compactions = Compactions()
    /// Request counters and times (`_node/_local/_stats`).
    let metrics = ServerMetrics()
    /// Bytes and connections of the network server (`ServerProcess` hands it to the HTTP engine).
    let traffic = HTTPTraffic()
    /// View indexes and the engine that maps for them (Views/).
    let views: ViewIndexes
    /// Databases created, written and deleted (`_db_updates`).
    let databaseUpdates: DatabaseUpdates
    /// Runs design functions (filters, `validate_doc_update`, views) in JavaScript worker processes.
    let queryServer: QueryServer
    /// Each database's validating design documents.
    let designFunctions: DesignFunctionCache
    /// The write path of every route that stores documents.
    let documentWriter: DocumentWriter
    /// Told of every request refused for a full disk (`couchlite receive` shows it in its progress line).
    package let onDiskFull = CallbackSlot<Void>()

    // MARK: Routing

    /// The route table, read by routing, authorization, the drop scope and body limits alike.
    let router: Router
    /// Decides from a request's route whether its user may make it.
    let authorizer: RequestAuthorizer

    // MARK: Handler groups (what the route table's rows call)

    /// `/`, `/_up`, `/_all_dbs`, `/_uuids`.
    package let server: ServerHandlers
    /// `/_membership` and `/_node/{node}/…`.
    let node: NodeHandlers
    /// `GET/PUT/DELETE /db`, `_security` and the maintenance calls.
    let databases: DatabaseHandlers
    /// Documents, `_local` documents, COPY and form uploads.
    let documents: DocumentHandlers
    /// `/db/doc/attachment`.
    let attachments: AttachmentHandlers
    /// The replication protocol: `_bulk_docs`, `_revs_diff`, `_missing_revs`, `_bulk_get`.
    let replication: ReplicationHandlers
    /// `/_replicate`, `/_active_tasks`, `/_scheduler/…`.
    let replicationJobs: ReplicationJobHandlers
    /// `_changes`.
    let changes: ChangesHandlers
    /// `_all_docs`.
    let allDocs: AllDocsHandlers
    /// `_design/d/_view/v`, `_design/d/_info` and `_view_cleanup`.
    let designViews: ViewHandlers
    /// `_design/d/_show`, `_list` and `_update`.
    let designRender: DesignRenderHandlers
    /// `_find`, `_explain` and `_index`: Mango queries and their json indexes.
    let mango: MangoHandlers
    /// `/_session`: cookie login and logout.
    let sessions: SessionHandlers
    /// `_users` documents.
    let users: UserHandlers

    /// - Parameter productRoutes: Routes a product adds to CouchDB's (the photo gallery), made from the app's
    ///   services; a product row for a CouchDB path and method replaces CouchDB's row (`App.joined`).
    init(
        store: Store, blobRegistry: BlobRegistry, serverUUID: String, options: Options, access: AccessControl,
        log: Logger, dataDirLock: DataDirLock? = nil, productRoutes: (AppServices) -> [Route] = { _ in [] }
    ) {
        self.dataDirLock = dataDirLock
        self.store = store
        self.access = access
        self.blobRegistry = blobRegistry
        self.serverUUID = serverUUID
        self.options = options
        self.log = log
        databaseUpdates = DatabaseUpdates(following: store, dataDir: options.dataDir, log: log)
        allowedHosts = Mutex(HostAllowList(options.allowedHosts))
        replicatorSettings = ReplicatorSettings(options)
        var limits = WorkerLimits()
        limits.heapBytes = options.jsHeapMiB * 1024 * 1024
        limits.addressSpaceBytes = max(limits.addressSpaceBytes, limits.heapBytes * 2 + 1024 * 1024 * 1024)
        queryServer = QueryServer(
            QueryServerConfiguration(
                maxWorkers: options.jsWorkers, timeout: .milliseconds(options.jsTimeoutMilliseconds), limits: limits)
        ) { message in log.info("design function log", ["message": message]) }
        views = ViewIndexes(directory: options.dataDir + "/views", engine: QueryServerViewEngine(server: queryServer))
        let designFunctions = DesignFunctionCache()
        self.designFunctions = designFunctions
        let documentWriter = DocumentWriter(
            blobs: blobRegistry, security: access.security, designFunctions: designFunctions, queryServer: queryServer)
        self.documentWriter = documentWriter
        // The local server's handler reaches the app through a box filled below: `self` is not
        // usable until every stored property is set.
        let box = AppBox()
        localServer = HTTPLocalServer { head, body, writer in
            box.app?.handle(head, body, writer, trusted: UserContext.localReplicator)
        }

        let services = AppServices(
            store: store, security: access.security, documents: documentWriter, blobs: blobRegistry, options: options,
            log: log)
        router = Router(App.joined(productRoutes(services), App.routeTable))
        authorizer = RequestAuthorizer(store: store, security: access.security)

        server = ServerHandlers(store: store, serverUUID: serverUUID)
        node = NodeHandlers(
            store: store, serverUUID: serverUUID, metrics: metrics, traffic: traffic, replications: replications,
            replicatorDatabase: replicatorDatabase,
            configSettings: ConfigSettings(log: log, access: access, replicator: replicatorSettings))
        databases = DatabaseHandlers(
            store: store, blobRegistry: blobRegistry, security: access.security, views: views,
            compactions: compactions, log: log, usersDBSecurityEditable: options.usersDBSecurityEditable)
        documents = DocumentHandlers(documents: documentWriter, blobs: blobRegistry, log: log)
        attachments = AttachmentHandlers(documents: documentWriter, blobs: blobRegistry)
        replication = ReplicationHandlers(documents: documentWriter, blobs: blobRegistry)
        replicationJobs = ReplicationJobHandlers(
            replications: replications, replicatorDatabase: replicatorDatabase, store: store, localServer: localServer,
            serverUUID: serverUUID, log: log)
        changes = ChangesHandlers(
            metrics: metrics, views: views, queryServer: queryServer, security: access.security, blobs: blobRegistry,
            compactions: compactions)
        allDocs = AllDocsHandlers(blobs: blobRegistry)
        designViews = ViewHandlers(views: views)
        designRender = DesignRenderHandlers(
            queryServer: queryServer, writer: documentWriter,
            requestObject: DesignRequestObject(security: access.security, compactions: compactions), views: designViews,
            allDocs: allDocs)
        mango = MangoHandlers(views: views, documents: documentWriter)
        sessions = SessionHandlers(authenticator: access.authenticator, options: options)
        users = UserHandlers(
            documents: documentWriter, security: access.security, identities: access.authenticator.identities,
            iterations: access.authenticator.iterations)
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
        var target: (name: String, deletions: Int)?
        var temporaryRequest: TemporaryAccounts.Request?
        do {
            var request = try Request(head: head, body: body)
            let resolution = router.resolve(method: request.method, segments: request.segments)
            // A request that races `DELETE /db` fails as the 404 it would have got a moment later (`clientError`).
            target = resolution.database.map { (name: $0, deletions: store.deletions(of: $0)) }
            guard let user = try authenticate(request, reply, trusted: trusted) else { return finish() }
            request.user = user
            try dispatch(resolution, request, reply) { route in
                temporaryRequest = access.authenticator.temporary.begin(user, method: request.verb, drop: route.drop)
            }
        } catch let error as HTTPError {
            // The client went away or sent a bad body mid-request; answer if we still can.
            reply.error(CouchError(error))
        } catch {
            let couchError = clientError(for: error, head, target)
            reply.error(couchError, headers: errorHeaders(couchError, head))
        }
        temporaryRequest?.end(status: reply.status)
        finish()

        func finish() {
            let elapsed = ContinuousClock.now - started
            let ms = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
            if trusted == nil { metrics.requestFinished(status: reply.status, milliseconds: ms) }
            // Formatting the line costs more than serving a small document: skip it unless it is logged.
            guard log.level >= .info else { return }
            log.info(
                "request",
                [
                    "client": head.remoteAddress ?? "-", "method": head.method, "path": head.target,
                    "status": String(reply.status), "bytes": String(reply.bytesSent),
                    "ms": String(Int(ms * 10) / 10) + "." + String(Int(ms * 10) % 10),
                ])
        }
    }

    /// Routes an authenticated request by the table: its row decides who may make it and how much they may send,
    /// before any of the body is read, and then its handler answers it.
    /// - Parameter begin: Told of the row once the request is authorized, before its handler runs.
    private func dispatch(
        _ resolution: Router.Resolution, _ request: Request, _ reply: Reply, begin: (Route) -> Void
    ) throws {
        switch resolution {
        case .unrouted(let unrouted):
            try authorizer.authorize(
                unrouted.access, drop: .closed, RouteParameters(database: unrouted.database), request.user)
            throw unrouted.error
        case .methodNotAllowed(let allowed, let rule, let parameters):
            try authorizer.authorize(rule, drop: .closed, parameters, request.user)
            var headers = HTTPHeaders()
            // CouchDB's `send_method_not_allowed` sends the one list as both the header and the reason.
            headers.set("Allow", allowed)
            reply.error(CouchError.methodNotAllowed(allowed), headers: headers)
        case .route(let route, let parameters):
            try authorizer.authorize(route.access, drop: route.drop, parameters, request.user)
            try limitBody(request, route, parameters)
            let charged = try chargeDrop(request, route)
            defer { if let charged { request.user.drop?.refund(charged - request.body.received) } }
            begin(route)
            guard route.leasesDatabase, let name = parameters.database else {
                let context = RequestContext(request: request, reply: reply, parameters: parameters, leased: nil)
                return try route.handler(self, context)
            }
            let database = try store.existing(name)
            // Held for the whole request: the bound on open databases never closes a database under its user.
            let lease = try database.lease()
            defer { lease.release() }
            let context = RequestContext(request: request, reply: reply, parameters: parameters, leased: database)
            try route.handler(self, context)
        }
    }

    /// Caps the body at what the route and the user may send.
    /// - Throws: 413 `too_large` when the declared Content-Length is over the cap (nothing read).
    private func limitBody(_ request: Request, _ route: Route, _ parameters: RouteParameters) throws(CouchError) {
        guard request.body.hasBody, let cap = authorizer.bodyCap(route.body, parameters, request.user) else { return }
        do {
            try request.body.limit(to: cap.bytes)
        } catch {
            guard cap.byUser else { throw CouchError(error) }
            throw .tooLarge("The request body is larger than this user may send (\(cap.bytes) bytes)")
        }
    }

    /// `receive --max-size`: an upload of the drop credentials is charged its body before it is read, 507 when it
    /// does not fit (`DropLedger.reserve`).
    /// - Returns: The bytes charged, nil when nothing was.
    private func chargeDrop(_ request: Request, _ route: Route) throws(CouchError) -> Int? {
        guard let drop = request.user.drop, request.body.hasBody,
            route.drop == .upload || (route.drop == .ownDatabase && route.body == .attachment)
        else { return nil }
        guard let charged = drop.reserve(declared: request.body.contentLength) else {
            throw .insufficientStorage
        }
        if request.body.contentLength == nil { try? request.body.limit(to: charged) }
        return charged
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
            onDiskFull()
        default:
            break
        }
        return mapped
    }

    /// From now on answers only requests whose `Host` is one of `hosts` or of `--allowed-hosts` (see
    /// `HostAllowList`): `receive` calls it with the addresses it printed, against DNS rebinding.
    package func answerOnly(hosts: [String]) {
        let list = HostAllowList(options.allowedHosts + hosts)
        allowedHosts.withLock { $0 = list }
    }

    /// Whether a browser's `Origin` names this server, for cross-site checks (the gallery's writes). With
    /// `--allowed-hosts` (always, for `receive`) it must be one of those names; without, it must be the
    /// request's own `Host` and that host one a page of another site cannot take over by DNS rebinding: a
    /// loopback name, the bound address, or an IP address literal. A name only the request claims (`Host:
    /// evil.example`, pointed at this server's address by its owner) is not enough.
    package func servesOrigin(_ origin: String, host: String?) -> Bool {
        let authority: Substring
        if origin.hasPrefix("http://") {
            authority = origin.dropFirst(7)
        } else if origin.hasPrefix("https://") {
            authority = origin.dropFirst(8)
        } else {
            return false
        }
        guard let (name, _) = HostAllowList.split(String(authority)) else { return false }
        let list = allowedHosts.withLock { $0 }
        if list.isActive { return list.allows(String(authority)) }
        guard let host, authority == host else { return false }
        return HostAllowList.cannotBeRebound(name, bind: options.bind)
    }

    /// Databases whose names may start with an underscore, as in CouchDB.
    static let systemDatabases: Set<String> = ["_users", "_replicator", "_global_changes"]
}
