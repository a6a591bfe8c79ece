import CouchStore
import CouchWire
import Foundation

@testable import CouchServer
@testable import PhotoDrop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

/// A response as the test client read it off the connection.
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

/// A real `App` over a fresh temporary data dir, spoken to without a socket: its own `HTTPLocalServer` calls
/// `app.handle` with `trusted: nil`, so every request authenticates itself (Basic auth) and names its `Host`
/// exactly as a network request does. Each request is one HTTP/1.0 connection.
final class InProcessServer {
    static let admin = Credentials("admin", "admin-pw")

    let app: App
    let directory: String
    private let local: HTTPLocalServer
    private var closed = false

    /// - Parameters:
    ///   - allowedHosts: `--allowed-hosts` (empty: every Host is answered, as `serve`'s default).
    ///   - usersSecurityEditable: `--users-db-security-editable`.
    init(allowedHosts: [String] = [], usersSecurityEditable: Bool = false) throws {
        directory = NSTemporaryDirectory() + "couchserver-inprocess-" + UUID().uuidString
        var options = Options()
        options.dataDir = directory
        options.admin = "\(InProcessServer.admin.name):\(InProcessServer.admin.password)"
        options.pbkdf2Iterations = 1000
        options.allowedHosts = allowedHosts
        options.usersDBSecurityEditable = usersSecurityEditable
        try DataDirectory.create(directory)
        let store = try Store(directory: directory + "/databases", alwaysOpen: App.systemDatabases)
        let (access, _) = try AccessControl.setUp(options: options, store: store)
        let app = App(
            store: store, blobRegistry: BlobRegistry(root: directory + "/attachments"),
            serverUUID: try DataDirectory.serverUUID(directory), options: options, access: access,
            log: Logger(label: "test", level: .error), productRoutes: GalleryRoutes.make)
        self.app = app
        local = HTTPLocalServer { head, body, writer in app.handle(head, body, writer, trusted: nil) }
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
        local.shutdown(timeout: .seconds(5))
        app.replications.cancelAll()
        app.localServer.shutdown(timeout: .seconds(5))
        app.store.close()
        app.databaseUpdates.log.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { shutdown() }

    // MARK: Requests

    /// Sends one request and reads its whole response (the server closes an HTTP/1.0 connection after it).
    /// - Parameters:
    ///   - json: A JSON body (sent as `application/json`); `raw` sends bytes as they are.
    ///   - host: The `Host` header (nil: none).
    @discardableResult
    func request(
        _ method: String, _ path: String, as user: Credentials? = nil, json: String? = nil, raw: [UInt8]? = nil,
        contentType: String? = nil, headers: [(String, String)] = [], host: String? = "127.0.0.1"
    ) throws -> TestResponse {
        var head = "\(method) \(path) HTTP/1.0\r\n"
        if let host { head += "Host: \(host)\r\n" }
        head += "Accept: application/json\r\n"
        if let user { head += "Authorization: \(user.header)\r\n" }
        let body = raw ?? json.map { Array($0.utf8) }
        if let body {
            head +=
                "Content-Type: \(contentType ?? (json != nil ? "application/json" : "application/octet-stream"))\r\n"
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return try exchange(Array((head + "\r\n").utf8) + (body ?? []), isHEAD: method == "HEAD")
    }

    /// Sends `bytes` as they are on a new connection and reads the response.
    func exchange(_ bytes: [UInt8], isHEAD: Bool = false) throws -> TestResponse {
        guard let fd = local.connect() else { throw InProcessFailure("no local connection") }
        defer { close(fd) }
        // A server that waited for a body it will never get fails the test instead of hanging it.
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw InProcessFailure("write failed: \(errno)") }
            sent += n
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw InProcessFailure("response timed out") }
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return try InProcessServer.parse(received, isHEAD: isHEAD)
    }

    /// Splits a response into status, headers and (de-chunked) body.
    static func parse(_ bytes: [UInt8], isHEAD: Bool) throws -> TestResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else {
            throw InProcessFailure("no response head in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw InProcessFailure("bad status: \(lines[0])") }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(
                (String(line[..<colon]), String(line[line.index(after: colon)...].drop { $0 == " " })))
        }
        var response = TestResponse(status: status, headers: headers, body: [])
        if isHEAD { return response }
        var body = Array(bytes[(end + 4)...])
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" { body = try dechunk(body) }
        if let length = response.header("Content-Length").flatMap(Int.init), length < body.count {
            body = Array(body[..<length])
        }
        response.body = body
        return response
    }

    private static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = bytes[index...].indices.first(where: { bytes[$0] == 10 }) else { break }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else {
                throw InProcessFailure("bad chunk size \(sizeText)")
            }
            if size == 0 { break }
            let start = lineEnd + 1
            guard start + size <= bytes.count else { throw InProcessFailure("short chunk") }
            out += bytes[start..<(start + size)]
            index = start + size + 2
        }
        return out
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

    /// Adds `couchlite receive`'s one-time credentials confined to `database`.
    func addDropCredentials(_ name: String, password: String, database: String) -> Credentials {
        app.access.authenticator.temporary.add(
            name: name, password: Array(password.utf8), database: database, expires: .now + .seconds(600))
        return Credentials(name, password)
    }
}
