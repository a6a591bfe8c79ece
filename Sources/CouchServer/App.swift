import Callbacks
import CouchQuery
import CouchStore
import CouchWire
import Foundation
import QueryServer

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
    /// The `Host` names answered and the `Origin`s served.
    package let hosts: HostPolicy
    /// `couchlite receive`'s one-time drop credentials.
    package var dropAccounts: TemporaryAccounts { access.authenticator.temporary }
    let compactions = Compactions()
    /// The bytes of compiled `$regex` programs alive at once across this server's `_find` and `_changes` selectors
    /// (64 MiB; past it a selector is 503).
    let regexMemory = RegexMemory(limit: RegexMemory.server.limit)
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

    /// - Parameter product: The handler groups a product adds to CouchDB's (the photo gallery), made from the app's
    ///   services; a product row for a CouchDB path and method replaces CouchDB's row (`App.joined`).
    init(
        store: Store, blobRegistry: BlobRegistry, serverUUID: String, options: Options, access: AccessControl,
        log: Logger, dataDirLock: DataDirLock? = nil, product: (AppServices) -> [any RouteCollection] = { _ in [] }
    ) {
        self.dataDirLock = dataDirLock
        self.store = store
        self.access = access
        self.blobRegistry = blobRegistry
        self.serverUUID = serverUUID
        self.options = options
        self.log = log
        databaseUpdates = DatabaseUpdates(following: store, dataDir: options.dataDir, log: log)
        hosts = HostPolicy(allowedHosts: options.allowedHosts, bind: options.bind)
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

        let server = ServerHandlers(store: store, serverUUID: serverUUID, databaseUpdates: databaseUpdates)
        let node = NodeHandlers(
            store: store, serverUUID: serverUUID, metrics: metrics, traffic: traffic, replications: replications,
            replicatorDatabase: replicatorDatabase,
            configSettings: ConfigSettings(log: log, access: access, replicator: replicatorSettings))
        let databases = DatabaseHandlers(
            store: store, blobRegistry: blobRegistry, security: access.security, views: views,
            compactions: compactions, log: log, usersDBSecurityEditable: options.usersDBSecurityEditable)
        let documents = DocumentHandlers(documents: documentWriter, blobs: blobRegistry, log: log)
        let attachments = AttachmentHandlers(documents: documentWriter, blobs: blobRegistry)
        let replication = ReplicationHandlers(documents: documentWriter, blobs: blobRegistry)
        let replicationJobs = ReplicationJobHandlers(
            replications: replications, replicatorDatabase: replicatorDatabase, store: store, localServer: localServer,
            serverUUID: serverUUID, log: log)
        var changes = ChangesHandlers(
            metrics: metrics, views: views, queryServer: queryServer, security: access.security, blobs: blobRegistry,
            compactions: compactions)
        changes.regexMemory = regexMemory
        changes.regexBudgetNanoseconds = UInt64(clamping: options.regexBudgetMilliseconds) &* 1_000_000
        let allDocs = AllDocsHandlers(blobs: blobRegistry)
        let designViews = ViewHandlers(views: views)
        let designRender = DesignRenderHandlers(
            queryServer: queryServer, writer: documentWriter,
            requestObject: DesignRequestObject(security: access.security, compactions: compactions), views: designViews,
            allDocs: allDocs)
        var mango = MangoHandlers(views: views, documents: documentWriter)
        mango.regexBudgetNanoseconds = UInt64(clamping: options.regexBudgetMilliseconds) &* 1_000_000
        mango.regexMemory = regexMemory
        let sessions = SessionHandlers(authenticator: access.authenticator, options: options)
        let users = UserHandlers(
            documents: documentWriter, security: access.security, identities: access.authenticator.identities,
            iterations: access.authenticator.iterations)
        let couchDB: [any RouteCollection] = [
            server, node, databases, documents, attachments, replication, replicationJobs, changes, allDocs,
            LocalDocsHandlers(), designViews, designRender, mango, sessions, users, ConsoleHandlers(),
        ]
        let services = AppServices(
            store: store, security: access.security, documents: documentWriter, blobs: blobRegistry, options: options,
            log: log, serverUUID: serverUUID, hosts: hosts, dropAccounts: access.authenticator.temporary)
        router = Router(App.joined(product(services).flatMap(\.routes), couchDB.flatMap(\.routes)))
        authorizer = RequestAuthorizer(store: store, security: access.security)
        box.app = self
    }

    /// The engine's entry point for every request.
    /// - Parameter trusted: The user an in-process connection (`localServer`) speaks for; nil for the
    ///   network, whose requests authenticate themselves.
    func handle(
        _ head: HTTPRequestHead, _ body: HTTPRequestBody, _ writer: HTTPResponseWriter, trusted: UserContext? = nil
    ) {
        respond(head, body, to: writer, trusted: trusted)
    }

    /// Answers one request into `sink`: the connection's writer, or memory for tests that call the router without
    /// a socket (`MemoryResponseSink`).
    package func respond(
        _ head: HTTPRequestHead, _ body: HTTPRequestBody, to sink: any ResponseSink, trusted: UserContext? = nil
    ) {
        let started = ContinuousClock.now
        let reply = Reply(sink: sink)
        if trusted == nil { metrics.requestStarted(method: head.method) }
        // In-process connections (`trusted`) name no host of ours; every network request must.
        guard trusted != nil || hosts.allows(head.headers["Host"]) else {
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
            // A session cookie is sent by the browser whichever page asks: its writes must come from this server's
            // pages (the console's, the gallery's) or from an origin CORS lets in with credentials.
            if request.user.handler == "cookie", route.access != .anyone, request.verb != .GET, request.verb != .HEAD {
                try PageGuard.requireCookieWrite(request.head, servedBy: hosts, cors: access.cors)
            }
            try limitBody(request, route, parameters)
            let charged = try chargeDrop(request, route)
            defer { if let charged { request.user.drop?.refund(charged - request.body.received) } }
            begin(route)
            guard route.leasesDatabase, let name = parameters.database else {
                let context = RequestContext(request: request, parameters: parameters, leased: nil)
                return try reply.send(route.handler(context))
            }
            let database = try store.existing(name)
            // Held for the whole request, its streamed body included: the bound on open databases never closes a
            // database under its user.
            let lease = try database.lease()
            defer { lease.release() }
            let context = RequestContext(request: request, parameters: parameters, leased: database)
            try reply.send(route.handler(context))
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

    /// `receive --max-size`: every body of the drop credentials on a row that may store it (`Route.chargesDrop`:
    /// documents, `_local` checkpoints, uploads) is charged before it is read, 507 when it does not fit
    /// (`DropLedger.reserve`).
    /// - Returns: The bytes charged, nil when nothing was.
    private func chargeDrop(_ request: Request, _ route: Route) throws(CouchError) -> Int? {
        guard let drop = request.user.drop, request.body.hasBody, route.chargesDrop else { return nil }
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

    /// Whether `name` is a server admin's (compared by bytes): the drop credentials never take one's name.
    package func isServerAdmin(_ name: String) -> Bool { access.authenticator.isServerAdmin(ExactName(name)) }

    /// Databases whose names may start with an underscore, as in CouchDB.
    static let systemDatabases: Set<String> = ["_users", "_replicator", "_global_changes"]

    /// Whether `name` is one of `systemDatabases`, by bytes (the routes it decides are authorized as that
    /// database's, so a canonically equivalent name must not pass for it).
    static func isSystemDatabase(_ name: String) -> Bool { systemDatabases.contains { $0.utf8Equals(name) } }
}
