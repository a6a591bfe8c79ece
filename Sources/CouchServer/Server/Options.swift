import Foundation
import RevTree

/// Command-line and environment configuration of the server.
///
/// Its `OptionTable` generates `--help`, the parser and the environment lookup, so the three can
/// never disagree.
struct Options: Sendable {
    var bind = "127.0.0.1"
    /// The plain HTTP port; nil (`--port off`) serves HTTPS only.
    var port: Int? = 5984
    /// Where HTTPS gets its certificate: nowhere (off), generated in the data dir, or files.
    var tls = TLSMode.off
    /// The HTTPS port (CouchDB's 6984; 0 picks a free one and prints it).
    var tlsPort = 6984
    var dataDir = "./data"
    var admin: String?
    var logLevel = LogLevel.info
    /// Plain text lines, or one JSON object per line for log collectors.
    var logFormat = LogFormat.text
    var maxConnections = 4096
    /// Open connections one non-loopback client address may hold (0 = no limit).
    var maxConnectionsPerAddress = 256
    /// Databases kept open while idle (CouchDB's `max_dbs_open`); the least recently used close beyond it.
    var maxDatabasesOpen = Store.defaultMaxOpenDatabases
    /// Seconds a kept-alive connection may stay idle (5 once the server is three quarters full).
    var idleTimeoutSeconds = 300
    /// Seconds a request body may take, plus one per 4 KiB received.
    var bodyTimeoutSeconds = 120
    /// Seconds a request head may take from its first byte (the first one from accept, TLS handshake included).
    var headerTimeoutSeconds = 30
    /// Origins allowed cross-origin requests (`*` for any); empty turns CORS off.
    var corsOrigins: [String] = []
    /// Whether CORS answers allow credentials (cookies, Basic auth), as PouchDB sends them.
    var corsCredentials = CORSPolicy.Credentials.off
    /// `Host` values the server answers to (see `HostAllowList`); empty allows any. `receive` sets its
    /// own addresses here, against DNS rebinding.
    var allowedHosts: [String] = []
    /// PBKDF2-SHA256 iterations of new password hashes (CouchDB 3.4's 600,000 unless lowered for tests).
    var pbkdf2Iterations = AuthLimits.pbkdf2Iterations
    /// CouchDB's `[couchdb] users_db_security_editable`: whether admins may change `_users/_security`
    /// (to open sign-up, for instance). Off by default, as in CouchDB 3.
    var usersDBSecurityEditable = false
    /// Longest a design function call (one batch) may run before its worker is killed, in ms (CouchDB's
    /// `os_process_timeout`, 5000).
    var jsTimeoutMilliseconds = 5000
    /// Most JavaScript worker processes at once.
    var jsWorkers = 4
    /// Most MiB one worker's JavaScript heap may hold.
    var jsHeapMiB = 256

    typealias Spec = OptionSpec<Options>

    static let table: [Spec] = [
        .text(
            "--bind", environment: "COUCHLITE_BIND", valueName: "ADDRESS",
            help: "address to listen on (IPv4 or IPv6), default 127.0.0.1", needs: "an address"
        ) { $0.bind = $1 },
        Spec(
            flag: "--port", environment: "COUCHLITE_PORT", valueName: "PORT",
            help: "HTTP port, default 5984 (0 picks a free port and prints it; off: HTTPS only)"
        ) { o, v throws(OptionsError) in
            if v == "off" {
                o.port = nil
                return
            }
            guard let p = Int(v), (0...65535).contains(p) else {
                throw OptionsError("--port must be 0...65535 or off, got '\(v)'")
            }
            o.port = p
        },
        Spec(
            flag: "--tls", environment: "COUCHLITE_TLS", valueName: "MODE",
            help: "auto: HTTPS with a self-signed certificate made and kept in the data dir; off (default)"
        ) { o, v throws(OptionsError) in
            switch v {
            case "auto": o.tls = .auto
            case "off": o.tls = .off
            default: throw OptionsError("--tls must be auto or off (or give --tls-cert and --tls-key), got '\(v)'")
            }
        },
        .text(
            "--tls-cert", environment: "COUCHLITE_TLS_CERT", valueName: "FILE",
            help: "HTTPS certificate (PEM, with its chain), used with --tls-key", needs: "a file"
        ) { $0.tls = .files(certificate: $1, key: $0.tls.keyFile ?? "") },
        .text(
            "--tls-key", environment: "COUCHLITE_TLS_KEY", valueName: "FILE",
            help: "HTTPS private key (PEM, RSA or EC, unencrypted), used with --tls-cert", needs: "a file"
        ) { $0.tls = .files(certificate: $0.tls.certificateFile ?? "", key: $1) },
        .integer(
            "--tls-port", environment: "COUCHLITE_TLS_PORT", valueName: "PORT",
            help: "HTTPS port when TLS is on, default 6984 (0 picks a free port and prints it)", in: 0...65535
        ) { $0.tlsPort = $1 },
        .text(
            "--data-dir", environment: "COUCHLITE_DATA_DIR", valueName: "DIR",
            help: "directory for databases and server state, default ./data", needs: "a directory"
        ) { $0.dataDir = $1 },
        Spec(
            flag: "--admin", environment: "COUCHLITE_ADMIN", valueName: "USER:PASS",
            help: "server admin credentials (visible in ps: prefer the environment or --admin-file)"
        ) { o, v throws(OptionsError) in
            o.admin = try Options.adminCredentials(v, source: "--admin")
        },
        Spec(
            flag: "--admin-file", environment: "COUCHLITE_ADMIN_FILE", valueName: "FILE",
            help: "read the server admin's USER:PASS from the first line of FILE"
        ) { o, v throws(OptionsError) in
            guard let data = FileManager.default.contents(atPath: v), let text = String(data: data, encoding: .utf8)
            else { throw OptionsError("--admin-file: cannot read '\(v)'") }
            let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let credentials = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
            o.admin = try Options.adminCredentials(credentials, source: "--admin-file \(v)")
        },
        .choice(
            "--log-level", environment: "COUCHLITE_LOG_LEVEL", valueName: "LEVEL",
            help: "error, warning, info or debug; default info", of: "error, warning, info or debug"
        ) { $0.logLevel = $1 },
        .choice(
            "--log-format", environment: "COUCHLITE_LOG_FORMAT", valueName: "FORMAT",
            help: "text or json (one JSON object per line); default text", of: "text or json"
        ) { $0.logFormat = $1 },
        .integer(
            "--max-connections", environment: "COUCHLITE_MAX_CONNECTIONS",
            help: "cap on open client connections, default 4096", in: 1...Int.max
        ) { $0.maxConnections = $1 },
        .integer(
            "--max-connections-per-address", environment: "COUCHLITE_MAX_CONNECTIONS_PER_ADDRESS",
            help: "cap on connections from one client address (loopback exempt), default 256; 0 = none", in: 0...Int.max
        ) { $0.maxConnectionsPerAddress = $1 },
        .integer(
            "--max-dbs-open", environment: "COUCHLITE_MAX_DBS_OPEN",
            help: "databases kept open while idle (least recently used close first), default 500", in: 1...Int.max
        ) { $0.maxDatabasesOpen = $1 },
        .integer(
            "--idle-timeout", environment: "COUCHLITE_IDLE_TIMEOUT", valueName: "SECONDS",
            help: "keep-alive idle time, default 300 (5 while over 3/4 of the connections are open)", in: 1...Int.max
        ) { $0.idleTimeoutSeconds = $1 },
        .integer(
            "--body-timeout", environment: "COUCHLITE_BODY_TIMEOUT", valueName: "SECONDS",
            help: "time a request body may take, default 120, plus 1 s per 4 KiB received", in: 1...Int.max
        ) { $0.bodyTimeoutSeconds = $1 },
        .integer(
            "--header-timeout", environment: "COUCHLITE_HEADER_TIMEOUT", valueName: "SECONDS",
            help: "time a request head may take (from accept for the first, TLS handshake included), default 30",
            in: 1...Int.max
        ) { $0.headerTimeoutSeconds = $1 },
        Spec(
            flag: "--cors-origins", environment: "COUCHLITE_CORS_ORIGINS", valueName: "LIST",
            help: "comma-separated origins allowed CORS (e.g. http://app.example:8080), or *; default none"
        ) { o, v throws(OptionsError) in
            let origins = v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard origins.allSatisfy({ $0 == "*" || $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
                throw OptionsError("--cors-origins takes * or origins with their scheme, like http://localhost:8080")
            }
            o.corsOrigins = origins
        },
        .choice(
            "--cors-credentials", environment: "COUCHLITE_CORS_CREDENTIALS", valueName: "WHEN",
            help: "false (default), true (listed origins only) or any-origin (also those * accepts)",
            of: "false, true or any-origin"
        ) { $0.corsCredentials = $1 },
        .integer(
            "--pbkdf2-iterations", environment: "COUCHLITE_PBKDF2_ITERATIONS",
            help: "PBKDF2-SHA256 iterations of new password hashes, default 600000 (lower only for tests)",
            in: AuthLimits.configurablePBKDF2Iterations
        ) { $0.pbkdf2Iterations = $1 },
        .integer(
            "--js-timeout", environment: "COUCHLITE_JS_TIMEOUT", valueName: "MS",
            help: "longest a filter/validate/map batch may run before its JavaScript worker is killed, default 5000",
            in: 10...3_600_000
        ) { $0.jsTimeoutMilliseconds = $1 },
        .integer(
            "--js-workers", environment: "COUCHLITE_JS_WORKERS",
            help: "most JavaScript worker processes running design functions at once, default 4", in: 1...256
        ) { $0.jsWorkers = $1 },
        .integer(
            "--js-heap-mib", environment: "COUCHLITE_JS_HEAP_MIB", valueName: "MIB",
            help: "most MiB one JavaScript worker's heap may hold, default 256", in: 8...16384
        ) { $0.jsHeapMiB = $1 },
        Spec(
            flag: "--users-db-security-editable", environment: "COUCHLITE_USERS_DB_SECURITY_EDITABLE",
            valueName: "BOOL", help: "let admins change _users/_security (e.g. to allow sign-up), default false"
        ) { o, v throws(OptionsError) in
            guard let flag = Bool(v) else { throw OptionsError("--users-db-security-editable must be true or false") }
            o.usersDBSecurityEditable = flag
        },
        Spec(
            flag: "--allowed-hosts", environment: "COUCHLITE_ALLOWED_HOSTS", valueName: "LIST",
            help: "comma-separated Host names (host or host:port) the server answers to; default any"
        ) { o, v throws(OptionsError) in
            let hosts = v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard hosts.allSatisfy({ HostAllowList.split($0) != nil }) else {
                throw OptionsError("--allowed-hosts takes names or addresses, like photos.local,192.168.1.20:5984")
            }
            o.allowedHosts = hosts
        },
    ]

    /// Checks `USER:PASS`.
    private static func adminCredentials(_ value: String, source: String) throws(OptionsError) -> String {
        guard let colon = value.firstIndex(of: ":"), colon != value.startIndex,
            value.index(after: colon) != value.endIndex
        else { throw OptionsError("\(source) must look like USER:PASS") }
        return value
    }

    /// Checks combinations of options.
    func validate() throws(OptionsError) {
        if case .files(let certificate, let key) = tls, certificate.isEmpty || key.isEmpty {
            throw OptionsError("--tls-cert and --tls-key go together: give both")
        }
        if port == nil, case .off = tls {
            throw OptionsError(
                "--port off leaves nothing to serve: turn HTTPS on with --tls auto or --tls-cert/--tls-key")
        }
        if corsCredentials == .listed && !corsOrigins.isEmpty && corsOrigins.allSatisfy({ $0 == "*" }) {
            throw OptionsError(
                "--cors-credentials true gives credentials to listed origins only, and --cors-origins lists none "
                    + "but *; to let any web page send its visitors' cookies here, say --cors-credentials any-origin")
        }
    }

    static let commandLine = OptionTable(
        summary: "usage: couchlite [serve] [options]\n\nA CouchDB-compatible replication server.", specs: table)

    static var usage: String { commandLine.usage }

    /// Parses the environment first, then the arguments, which win.
    /// - Returns: nil when `--help` was asked for.
    static func parse(arguments: [String], environment: [String: String]) throws(OptionsError) -> Options? {
        var options = Options()
        guard try commandLine.parse(arguments, environment: environment, into: &options) else { return nil }
        try options.validate()
        return options
    }
}

/// Where the HTTPS listener's certificate comes from.
enum TLSMode: Sendable, Equatable {
    /// No HTTPS.
    case off
    /// A self-signed certificate generated in the data dir on first start and renewed near its expiry.
    case auto
    /// PEM files given on the command line.
    case files(certificate: String, key: String)

    var certificateFile: String? { if case .files(let file, _) = self { file } else { nil } }
    var keyFile: String? { if case .files(_, let file) = self { file } else { nil } }
    var isOn: Bool { self != .off }
}
