import CouchServer
import CouchStore
import Foundation
import PhotoDrop

/// `couchlite serve`'s options: one row per flag, which is also its environment variable and its `--help` line.
extension Options {
    typealias Spec = OptionSpec<Options>

    static let table: [Spec] = [
        .text(
            "--bind", environment: "COUCHLITE_BIND", valueName: "ADDRESS",
            help: "address to listen on (IPv4 or IPv6), default 127.0.0.1", needs: "an address"
        ) { $0.bind = $1 },
        .toggle(
            "--announce", environment: "COUCHLITE_ANNOUNCE",
            help: "announce the server on the LAN as _couchdb._tcp (DNS-SD over mDNS; couchlite peers lists it)"
        ) { $0.announce = $1 },
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
        .integer(
            "--shutdown-timeout", environment: "COUCHLITE_SHUTDOWN_TIMEOUT", valueName: "SECONDS",
            help: "how long SIGTERM/SIGINT waits for requests in flight before it cuts them (logged), default 30",
            in: 0...86_400
        ) { $0.shutdownTimeoutSeconds = $1 },
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
        .integer(
            "--replicator-retry", environment: "COUCHLITE_REPLICATOR_RETRY", valueName: "SECONDS",
            help: "first pause before a crashed _replicator job runs again, doubling per crash, default 30",
            in: 1...3600
        ) { $0.replicatorRetrySeconds = $1 },
        .integer(
            "--replicator-max-jobs", environment: "COUCHLITE_REPLICATOR_MAX_JOBS", valueName: "N",
            help: "most _replicator jobs running at once, the others wait (pending), default 500", in: 0...1_000_000
        ) { $0.replicatorMaxJobs = $1 },
        .integer(
            "--replicator-interval", environment: "COUCHLITE_REPLICATOR_INTERVAL", valueName: "MS",
            help: "how often waiting _replicator jobs are rotated in, default 60000", in: 1...86_400_000
        ) { $0.replicatorIntervalMilliseconds = $1 },
        .integer(
            "--replicator-max-churn", environment: "COUCHLITE_REPLICATOR_MAX_CHURN", valueName: "N",
            help: "most running _replicator jobs one rotation stops for waiting ones, default 20", in: 0...1_000_000
        ) { $0.replicatorMaxChurn = $1 },
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

    /// `couchlite [serve] --help`: every subcommand first (a bare `couchlite` is the server), then the server's
    /// options.
    static let commandLine = OptionTable(
        summary: Commands.overview + "\n\nThe server (couchlite serve, or couchlite with options only):", specs: table)

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
