import CMalloc
import CouchCrypto
import CouchStore
import CouchWire
import Dispatch
import Foundation
import Synchronization

/// A started couchlite server: the store, the endpoints and the listening HTTP engine.
///
/// `couchlite serve` runs one until SIGINT/SIGTERM; `couchlite receive` runs one around a drop
/// database; tests start one in-process on port 0.
package final class ServerProcess: Sendable {
    package let app: App
    /// The plain HTTP listener; nil with `--port off`.
    package let server: HTTPServer?
    /// The port actually bound (the configured one, or the one the kernel picked for port 0); nil with `--port off`.
    package let port: Int?
    /// The HTTPS listener (same handler, limits and timeouts); nil without TLS.
    let tlsServer: HTTPServer?
    /// Signalled once by the first shutdown to finish (`waitUntilStopped` passes it on to the next waiter).
    private let stopped = DispatchSemaphore(value: 0)
    /// The HTTPS port actually bound.
    package let tlsPort: Int?
    /// The certificate HTTPS presents (its fingerprint is printed at start).
    package let tlsCertificate: TLSCertificate?
    /// Set when `--tls auto` made a new certificate at this start (and why it replaced an old one, if it did).
    package let tlsGenerated: TLSIdentity.Loaded?
    /// A server admin created on first start because none was configured (shown once, then only hashed).
    package let generatedAdmin: ServerAdmins.Generated?

    /// Locks and opens the data dir and starts listening.
    /// - Throws: `DataDirLock.Held` when another process uses the data dir (nothing is written there then).
    /// - Parameters:
    ///   - extraHosts: more addresses served on the same port (`couchlite receive`'s LAN addresses).
    ///   - product: the handler groups a product adds to CouchDB's (`App.open`).
    package init(
        options: Options, log: Logger, extraHosts: [String] = [],
        product: (AppServices) -> [any RouteCollection] = { _ in [] }
    ) throws {
        // Everything the server creates from here on (SQLite files with their -wal and -shm, blobs
        // and their temporary files, security objects) is owner-only from its creation: they hold password hashes,
        // admin credentials and every user's documents.
        umask(0o077)
        // The lock first: a process refused because another uses the dir must leave the dir as it found it.
        let lock = try DataDirLock.acquire(dataDir: options.dataDir)
        try DataDirectory.create(options.dataDir)
        // TLS first: a bad certificate or key file should stop the start before anything listens.
        let tls = try Self.tlsContext(options)
        (app, generatedAdmin) = try App.open(options: options, log: log, dataDirLock: lock, product: product)
        var configuration = HTTPServerConfiguration()
        configuration.host = options.bind
        configuration.extraHosts = extraHosts
        configuration.maxConnections = options.maxConnections
        configuration.maxConnectionsPerAddress = options.maxConnectionsPerAddress
        configuration.idleTimeout = .seconds(options.idleTimeoutSeconds)
        configuration.crowdedIdleTimeout = .seconds(min(5, options.idleTimeoutSeconds))
        configuration.bodyTimeout = .seconds(options.bodyTimeoutSeconds)
        configuration.headerTimeout = .seconds(options.headerTimeoutSeconds)
        configuration.serverHeader = "couchlite/\(App.version)"
        configuration.traffic = app.traffic
        let handlerApp = app
        let handler: HTTPHandler = { head, body, writer in handlerApp.handle(head, body, writer) }
        if let plainPort = options.port {
            configuration.port = plainPort
            let plain = HTTPServer(configuration: configuration, handler: handler)
            port = try plain.start()
            server = plain
        } else {
            server = nil
            port = nil
        }
        if let (context, loaded) = tls {
            configuration.port = options.tlsPort
            configuration.tls = context
            let secure = HTTPServer(configuration: configuration, handler: handler)
            do {
                tlsPort = try secure.start()
            } catch {
                server?.shutdown(timeout: .zero)
                throw error
            }
            tlsServer = secure
            tlsCertificate = context.certificate
            tlsGenerated = loaded?.generated == true ? loaded : nil
        } else {
            tlsServer = nil
            tlsPort = nil
            tlsCertificate = nil
            tlsGenerated = nil
        }
        let replicator = ReplicatorDatabase(app: app)
        app.replicatorDatabase.withLock { $0 = replicator }
        replicator.start()
    }

    /// The server context for `options.tls`, and the `--tls auto` identity when that made it.
    private static func tlsContext(_ options: Options) throws -> (TLSContext, TLSIdentity.Loaded?)? {
        switch options.tls {
        case .off: return nil
        case .files(let certificate, let key):
            return (try TLSContext.server(certificateFile: certificate, keyFile: key), nil)
        case .auto:
            let loaded = try TLSIdentity.loadOrCreate(dataDir: options.dataDir, bind: options.bind)
            return (try TLSContext.server(certificate: loaded.certificate, key: loaded.key), loaded)
        }
    }

    /// Every listener, plain first.
    var servers: [HTTPServer] { [server, tlsServer].compactMap { $0 } }

    /// The `http://host:port/` base URL for the bound address; nil with `--port off`.
    package var baseURL: String? { port.map { "http://\(urlHost):\($0)/" } }

    /// The `https://host:port/` base URL for the bound address; nil without TLS.
    package var tlsBaseURL: String? { tlsPort.map { "https://\(urlHost):\($0)/" } }

    /// The URL clients should prefer: HTTPS when it is on.
    package var preferredBaseURL: String { tlsBaseURL ?? baseURL ?? "" }

    private var urlHost: String { ServerProcess.urlHost(bind: app.options.bind) }

    /// How `--bind ADDRESS` is written in a URL: an IPv6 address in brackets, an IPv4 address in the dotted quad it
    /// stands for (the resolver also takes inet_aton's short forms: `0` is 0.0.0.0, `127.1` is 127.0.0.1), a host
    /// name as given.
    static func urlHost(bind: String) -> String {
        if bind.contains(":") { return "[\(bind)]" }
        var address = in_addr()
        guard bind.utf8.allSatisfy({ $0 < 0x80 }), inet_aton(bind, &address) != 0 else { return bind }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return bind }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// How long the threads of requests cut by a shutdown get to notice before the process goes on without them
    /// (a live feed notices within a second, a body read or a response write at once).
    static let cutGrace: Duration = .seconds(2)

    /// Stops every listener: no new connection, idle ones closed, in-flight requests given until `timeout` has
    /// passed; then their sockets are shut down (logged: how many and which), and their threads get `cutGrace`.
    /// - Returns: the requests cut.
    @discardableResult
    package func shutdown(timeout: Duration) -> [HTTPCutRequest] {
        shutdown(until: .now + timeout, waited: timeout)
    }

    @discardableResult
    private func shutdown(until deadline: ContinuousClock.Instant, waited: Duration) -> [HTTPCutRequest] {
        // One deadline for both listeners: each stops accepting at once, and neither waits after the other.
        for server in servers { server.stopAccepting() }
        for server in servers { server.waitForRequests(until: deadline) }
        let cut = servers.flatMap { $0.cutRequests() }
        if !cut.isEmpty {
            let now = ContinuousClock.now
            app.log.warning(
                "shutdown cut requests in flight",
                ["requests": String(cut.count), "waited_s": Self.seconds(waited, digits: 0)])
            for request in cut {
                app.log.warning(
                    "shutdown cut a request",
                    [
                        "client": request.client ?? "-", "method": request.method, "path": request.path,
                        "running_s": Self.seconds(now - request.started, digits: 1),
                    ])
            }
        }
        let graceEnd = ContinuousClock.now + Self.cutGrace
        let left = servers.reduce(0) { $0 + ($1.waitForConnections(until: graceEnd) ? 0 : $1.remainingConnections) }
        if left > 0 {
            app.log.warning("shutdown goes on without connections that did not end", ["connections": String(left)])
        }
        stopped.signal()
        return cut
    }

    private static func seconds(_ duration: Duration, digits: Int) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return String(format: "%.\(digits)f", max(value, 0))
    }

    /// Blocks until a shutdown has finished: every listener has stopped, or its requests were cut and given their
    /// grace (a handler that noticed nothing is not waited for: the process ends under it).
    package func waitUntilStopped() {
        stopped.wait()
        stopped.signal()
    }

    /// From now on SIGINT and SIGTERM stop the server gracefully (`shutdown()`: replications checkpoint, in-flight
    /// requests finish). Called before the server says it is listening, so a supervisor's stop at once after that
    /// line is a graceful one.
    package func stopOnSignal(log: Logger) {
        StopSignals.onStop { [self] number in
            log.info("shutting down", ["signal": String(number)])
            shutdown()
        }
    }

    /// Blocks until the server has stopped (`stopOnSignal`), then stops what is left and closes the store.
    package func runUntilStopped() {
        waitUntilStopped()
        app.replicatorDatabase.withLock { $0 }?.stop()
        app.replications.cancelAll()
        app.localServer.shutdown(timeout: Self.cutGrace)
        app.store.close()
        app.databaseUpdates.log.close()
        app.dataDirLock?.release()
    }

    /// The order of a graceful stop, all of it within `--shutdown-timeout`: replications first (10 s at most),
    /// while the server and the local databases they checkpoint into still answer (their `_replicate` requests
    /// then end too), then the HTTP server, whose requests in flight get what is left.
    package func shutdown() {
        let timeout = Duration.seconds(app.options.shutdownTimeoutSeconds)
        let deadline = ContinuousClock.now + timeout
        app.replicatorDatabase.withLock { $0 }?.stop()
        app.replications.stopAll(within: min(.seconds(10), timeout))
        shutdown(until: deadline, waited: timeout)
    }

    /// Tunes the process once, before any server starts.
    package static func prepareProcess() {
        MallocTunables.applyByRestarting()
        // glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps freed
        // memory in them; with a thread per connection, 2,000 long-poll feeds would leave that memory
        // behind after they close. A few shared arenas keep resident memory flat.
        _ = mallopt(M_ARENA_MAX, 2)
        HeapTrimmer.start()
    }
}

/// The files at the top of `--data-dir`.
enum DataDirectory {
    /// Creates the data dir (owner-only, `0700`) if missing, and narrows one that others may enter.
    package static func create(_ path: String) throws {
        try PrivateFile.createDirectory(path)
    }

    /// Reads the server's persistent uuid from `<data-dir>/server.json`, creating it on first start.
    package static func serverUUID(_ dataDir: String) throws -> String {
        let path = dataDir + "/server.json"
        if let data = FileManager.default.contents(atPath: path),
            let json = try? JSON.parse(Array(data)), let uuid = json["uuid"]?.stringValue
        {
            return uuid
        }
        let uuid = Secrets.randomBytes(16).hexString
        let bytes = JSON.object(JSONObject([("uuid", .string(uuid))])).serialized()
        try PrivateFile.write(bytes, to: path)
        return uuid
    }
}
