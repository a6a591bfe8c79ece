import CouchWire
import Foundation
import RevTree

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
    /// The photo gallery's thumbnail cache (Gallery/).
    let gallery: GalleryState

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
        self.gallery = GalleryState(dataDir: options.dataDir)
    }

    /// The engine's entry point for every request.
    func handle(_ head: HTTPRequestHead, _ body: HTTPRequestBody, _ writer: HTTPResponseWriter) {
        let started = ContinuousClock.now
        let reply = Reply(writer: writer)
        applyCORS(head, reply)
        defer { UserContext.clearCurrent() }
        var temporaryRequest: TemporaryAccounts.Request?
        do {
            try checkHost(head)
            let request = try Request(head: head, body: body)
            if try admit(request, reply) {
                temporaryRequest = access.authenticator.temporary.begin(
                    UserContext.current, method: request.method, segments: request.segments)
                try route(request, reply)
            }
        } catch let error as CouchError {
            reply.error(error, headers: errorHeaders(error, head))
        } catch let error as HTTPError {
            // The client went away or sent a bad body mid-request; answer if we still can.
            reply.error(CouchError(error))
        } catch {
            log.error("request failed", ["error": String(describing: error), "path": head.path])
            reply.error(.unknownError(String(describing: error)))
        }
        temporaryRequest?.end(status: reply.status)
        // Formatting the line costs more than serving a small document: skip it unless it is logged.
        guard log.level >= .info else { return }
        let elapsed = ContinuousClock.now - started
        let ms = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
        log.info(
            "request",
            [
                "client": head.remoteAddress ?? "-", "method": head.method, "path": head.target,
                "status": String(reply.status),
                "bytes": String(reply.bytesSent), "ms": String(Int(ms * 10) / 10) + "." + String(Int(ms * 10) % 10),
            ])
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
            guard segments.count == 1 else { throw CouchError.notFound("missing") }
            switch first {
            case "_up": return try up(request, reply)
            case "_all_dbs": return try allDatabases(request, reply)
            case "_uuids": return try uuids(request, reply)
            case "_session": return try sessionEndpoint(request, reply)
            default: throw CouchError.notFound("missing")
            }
        }
        if first == App.usersDatabase, try usersRoute(request, reply) { return }
        if segments.count == 1 {
            try databaseRoot(first, request, reply)
            // A created or deleted database starts again from the default `_security`.
            if request.method == "PUT" || request.method == "DELETE" { access.security.reset(first) }
            return
        }
        let database = try openDatabase(first)
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
            if segments[3] == "_view" || segments[3] == "_list" || segments[3] == "_show" || segments[3] == "_update" {
                throw CouchError.notImplemented(
                    "couchlite does not execute design document functions (\(segments[3])).")
            }
            return try attachment(database, docID, segments[3...].joined(separator: "/"), request, reply)
        case "_security": return try securityObject(database, request, reply)
        case "_find", "_index", "_explain", "_design_docs", "_purge", "_view_cleanup":
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

    /// DNS-rebinding defence: once `access.hosts` lists the names this server answers to, a request whose
    /// `Host` names another (a page of `evil.example` that made its name resolve to this machine) is refused
    /// before anything else, as its browser would otherwise treat this server as `evil.example`'s own.
    private func checkHost(_ head: HTTPRequestHead) throws(CouchError) {
        guard access.hosts.allows(head.headers["Host"]) else {
            throw .badRequest("The Host header does not name this server.")
        }
    }

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
