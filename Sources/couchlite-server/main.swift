import CMalloc
import CouchCrypto
import CouchWire
import Dispatch
import Foundation
import RevTree

// couchlite-server: parse options, open the store, serve until SIGINT/SIGTERM, then shut down
// gracefully (stop accepting, let in-flight requests finish, close the store).

let options: Options
do {
    guard
        let parsed = try Options.parse(
            arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
    else {
        print(Options.usage)
        exit(0)
    }
    options = parsed
} catch {
    FileHandle.standardError.write(Data("couchlite-server: \(error)\n\n\(Options.usage)\n".utf8))
    exit(64)
}

let log = Logger(label: "couchlite", level: options.logLevel)

// glibc gives each thread that allocates its own malloc arena (up to 8 per core) and keeps freed
// memory in them; with a thread per connection, 2,000 long-poll feeds would leave that memory
// behind after they close. A few shared arenas keep resident memory flat.
_ = mallopt(M_ARENA_MAX, 2)

/// Reads the server's persistent uuid from `<data-dir>/server.json`, creating it on first start.
func loadServerUUID(dataDir: String) throws -> String {
    let path = dataDir + "/server.json"
    if let data = FileManager.default.contents(atPath: path),
        let json = try? JSON.parse(Array(data)), let uuid = json["uuid"]?.stringValue
    {
        return uuid
    }
    let uuid = Secrets.randomBytes(16).hexString
    let bytes = JSON.object(JSONObject([("uuid", .string(uuid))])).serialized()
    try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
    return uuid
}

let app: App
let server: HTTPServer
var generatedAdmin: ServerAdmins.Generated?
do {
    try FileManager.default.createDirectory(atPath: options.dataDir, withIntermediateDirectories: true)
    let store = try Store(directory: options.dataDir + "/databases")
    let uuid = try loadServerUUID(dataDir: options.dataDir)
    let (access, generated) = try AccessControl.setUp(options: options, store: store)
    generatedAdmin = generated
    app = App(
        store: store, blobRegistry: BlobRegistry(root: options.dataDir + "/attachments"), serverUUID: uuid,
        options: options, access: access, log: log)
    var configuration = HTTPServerConfiguration()
    configuration.host = options.bind
    configuration.port = options.port
    configuration.maxConnections = options.maxConnections
    configuration.serverHeader = "couchlite/\(App.version)"
    let handlerApp = app
    server = HTTPServer(configuration: configuration) { head, body, writer in
        handlerApp.handle(head, body, writer)
    }
    let port = try server.start()
    log.info("listening", ["address": options.bind, "port": String(port), "data_dir": options.dataDir])
    // A machine-readable line for scripts that start us on port 0.
    let host = options.bind.contains(":") ? "[\(options.bind)]" : options.bind
    FileHandle.standardOutput.write(Data("couchlite listening on http://\(host):\(port)/\n".utf8))
    if let generated = generatedAdmin {
        // Shown once: only the hash is kept (in <data-dir>/admins.json).
        FileHandle.standardOutput.write(
            Data(
                """
                couchlite: no server admin was configured, so one was created:
                  name: \(generated.name)   password: \(generated.password)
                This password is shown only once; only its hash is stored. Try:
                  curl -u '\(generated.name):\(generated.password)' http://\(host):\(port)/_session
                Set --admin USER:PASS (or COUCHLITE_ADMIN) to choose your own.

                """.utf8))
    }
} catch {
    log.error("could not start", ["error": String(describing: error)])
    exit(1)
}

/// Stops the server on SIGINT/SIGTERM. Installed from a nonisolated function: a closure formed in
/// top-level (main-actor) code would assert main-actor isolation when Dispatch runs it on its own
/// thread.
nonisolated func installSignalHandlers(server: HTTPServer, log: Logger) -> [any DispatchSourceSignal] {
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let queue = DispatchQueue(label: "couchlite.signals")
    return [SIGINT, SIGTERM].map { signalNumber in
        let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: queue)
        source.setEventHandler {
            log.info("shutting down", ["signal": String(signalNumber)])
            server.shutdown(timeout: .seconds(10))
        }
        source.resume()
        return source
    }
}

let signalSources = installSignalHandlers(server: server, log: log)
server.waitUntilStopped()
app.store.close()
log.info("stopped")
exit(0)
