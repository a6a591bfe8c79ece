import CouchStore
import CouchWire
import Foundation

@testable import CouchServer
@testable import PhotoDrop

/// Who a test request speaks for: nobody, or a name and password sent as Basic auth.
struct Credentials: Sendable {
    let name: String
    let password: String

    init(_ name: String, _ password: String) {
        self.name = name
        self.password = password
    }

    var header: String { "Basic " + Data("\(name):\(password)".utf8).base64EncodedString() }
}

/// A response as the app answered it.
struct TestResponse: CustomStringConvertible {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    var json: JSON { (try? JSON.parse(body)) ?? .null }
    var error: String? { json["error"]?.stringValue }
    var reason: String? { json["reason"]?.stringValue }
    var text: String { String(decoding: body, as: UTF8.self) }
    var description: String { "\(status) \(text.prefix(300))" }
}

struct InProcessFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A real `App` over a fresh temporary data dir, called without a socket: each request is a `HTTPRequestHead` and
/// an in-memory body handed to `App.respond`, and the response is read off a `MemoryResponseSink`, so no parser runs
/// on either side (the bytes on the wire are `conformance/`'s). With `trusted: nil`, every request authenticates
/// itself (Basic auth) and names its `Host` exactly as a network request does.
final class InProcessServer {
    static let admin = Credentials("admin", "admin-pw")

    let app: App
    let directory: String
    private var closed = false

    /// - Parameters:
    ///   - allowedHosts: `--allowed-hosts` (empty: every Host is answered, as `serve`'s default).
    ///   - usersSecurityEditable: `--users-db-security-editable`.
    ///   - product: The handler groups added to CouchDB's (the gallery's, as `serve` adds them).
    init(
        allowedHosts: [String] = [], usersSecurityEditable: Bool = false,
        product: (AppServices) -> [any RouteCollection] = GalleryRoutes.make, regexBudgetMilliseconds: Int? = nil
    ) throws {
        directory = NSTemporaryDirectory() + "couchserver-inprocess-" + UUID().uuidString
        var options = Options()
        options.dataDir = directory
        options.admin = "\(InProcessServer.admin.name):\(InProcessServer.admin.password)"
        options.pbkdf2Iterations = 1000
        options.allowedHosts = allowedHosts
        options.usersDBSecurityEditable = usersSecurityEditable
        if let regexBudgetMilliseconds { options.regexBudgetMilliseconds = regexBudgetMilliseconds }
        app = try App.open(options: options, log: Logger(label: "test", level: .error), product: product).app
    }

    /// Runs `body` with a fresh server, then shuts it down and deletes its data dir.
    static func with<T>(
        allowedHosts: [String] = [], usersSecurityEditable: Bool = false, _ body: (InProcessServer) throws -> T
    ) throws -> T {
        let server = try InProcessServer(allowedHosts: allowedHosts, usersSecurityEditable: usersSecurityEditable)
        defer { server.shutdown() }
        return try body(server)
    }

    func shutdown() {
        guard !closed else { return }
        closed = true
        app.replications.cancelAll()
        app.localServer.shutdown(timeout: .seconds(5))
        app.store.close()
        app.databaseUpdates.log.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { shutdown() }

    // MARK: Requests

    /// Answers one request and returns its whole response.
    /// - Parameters:
    ///   - json: A JSON body (sent as `application/json`); `raw` sends bytes as they are.
    ///   - declaredLength: The `Content-Length` claimed when it should differ from the body's (a client that
    ///     declares more than it sends).
    ///   - host: The `Host` header (nil: none).
    ///   - remoteAddress: The client's address, as the listener names it (nil: none, as in-process).
    @discardableResult
    func request(
        _ method: String, _ path: String, as user: Credentials? = nil, json: String? = nil, raw: [UInt8]? = nil,
        declaredLength: Int? = nil, contentType: String? = nil, headers: [(String, String)] = [],
        host: String? = "127.0.0.1", from remoteAddress: String? = nil, clientGone: Bool = false
    ) throws -> TestResponse {
        var fields = HTTPHeaders()
        if let host { fields.add("Host", host) }
        fields.add("Accept", "application/json")
        if let user { fields.add("Authorization", user.header) }
        let body = raw ?? json.map { Array($0.utf8) } ?? []
        if !body.isEmpty || declaredLength != nil {
            fields.add("Content-Type", contentType ?? (json != nil ? "application/json" : "application/octet-stream"))
            fields.add("Content-Length", String(declaredLength ?? body.count))
        }
        for (name, value) in headers { fields.add(name, value) }
        var head = HTTPRequestHead(method: method, target: path, version: .http1_0, headers: fields)
        head.remoteAddress = remoteAddress
        let sink = MemoryResponseSink(isHEAD: method == "HEAD")
        sink.peerClosed = clientGone
        app.respond(head, HTTPRequestBody(bytes: body, declaredLength: declaredLength), to: sink)
        guard !sink.aborted else { throw InProcessFailure("the response was cut off after \(sink.body.count) bytes") }
        guard sink.headSent else { throw InProcessFailure("no response") }
        return TestResponse(status: sink.status, headers: sink.headers.map { ($0.0, $0.1) }, body: sink.body)
    }

    // MARK: Setup through the API

    /// Creates `name` as the server admin.
    func createDatabase(_ name: String) throws {
        let r = try request("PUT", "/\(name)", as: InProcessServer.admin)
        guard r.status == 201 else { throw InProcessFailure("PUT /\(name): \(r)") }
    }

    /// Creates a `_users` account as the server admin; returns its credentials.
    @discardableResult
    func createUser(_ name: String, password: String = "pw-secret", roles: [String] = []) throws -> Credentials {
        let list = roles.map { "\"\($0)\"" }.joined(separator: ",")
        let r = try request(
            "PUT", "/_users/org.couchdb.user:\(name)", as: InProcessServer.admin,
            json: #"{"name":"\#(name)","password":"\#(password)","roles":[\#(list)],"type":"user"}"#)
        guard r.status == 201 || r.status == 202 else { throw InProcessFailure("user \(name): \(r)") }
        return Credentials(name, password)
    }

    /// Sets a database's `_security` as the server admin.
    func setSecurity(_ database: String, admins: [String] = [], members: [String] = []) throws {
        func names(_ list: [String]) -> String { list.map { "\"\($0)\"" }.joined(separator: ",") }
        let r = try request(
            "PUT", "/\(database)/_security", as: InProcessServer.admin,
            json:
                #"{"admins":{"names":[\#(names(admins))],"roles":[]},"members":{"names":[\#(names(members))],"roles":[]}}"#
        )
        guard r.status == 200 else { throw InProcessFailure("_security of \(database): \(r)") }
    }

    /// Adds `couchlite receive`'s one-time credentials confined to `database`, storing at most `maxBytes`
    /// (`receive --max-size`) with a ledger bounded by `limits`.
    func addDropCredentials(
        _ name: String, password: String, database: String, maxBytes: Int = .max,
        limits: DropLedger.Limits = DropLedger.Limits()
    ) -> Credentials {
        app.access.authenticator.temporary.add(
            name: name, password: Array(password.utf8), database: database, expires: .now + .seconds(600),
            maxBytes: maxBytes, limits: limits)
        return Credentials(name, password)
    }
}
