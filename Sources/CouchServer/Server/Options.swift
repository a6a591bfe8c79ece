import CouchQuery
import CouchStore
import Foundation

/// The configuration of the server, as the command line and the environment set it (the `couchlite` executable's
/// option tables generate `--help`, the parser and the environment lookup from one list, so the three can never
/// disagree).
package struct Options: Sendable {
    package var bind = "127.0.0.1"
    /// Whether `serve` announces itself on the LAN as `_couchdb._tcp` (DNS-SD over mDNS, `--announce`).
    package var announce = false
    /// The plain HTTP port; nil (`--port off`) serves HTTPS only.
    package var port: Int? = 5984
    /// Where HTTPS gets its certificate: nowhere (off), generated in the data dir, or files.
    package var tls = TLSMode.off
    /// The HTTPS port (CouchDB's 6984; 0 picks a free one and prints it).
    package var tlsPort = 6984
    package var dataDir = "./data"
    package var admin: String?
    package var logLevel = LogLevel.info
    /// Plain text lines, or one JSON object per line for log collectors.
    package var logFormat = LogFormat.text
    package var maxConnections = 4096
    /// Open connections one non-loopback client address may hold (0 = no limit).
    package var maxConnectionsPerAddress = 256
    /// Databases kept open while idle (CouchDB's `max_dbs_open`); the least recently used close beyond it.
    package var maxDatabasesOpen = Store.defaultMaxOpenDatabases
    /// Seconds a kept-alive connection may stay idle (5 once the server is three quarters full).
    package var idleTimeoutSeconds = 300
    /// Seconds a request body may take, plus one per 4 KiB received.
    package var bodyTimeoutSeconds = 120
    /// Seconds a request head may take from its first byte (the first one from accept, TLS handshake included).
    package var headerTimeoutSeconds = 30
    /// Seconds a stop signal waits for requests in flight (replications' checkpoints included) before it cuts them.
    package var shutdownTimeoutSeconds = 30
    /// Origins allowed cross-origin requests (`*` for any); empty turns CORS off.
    package var corsOrigins: [String] = []
    /// Whether CORS answers allow credentials (cookies, Basic auth), as PouchDB sends them.
    package var corsCredentials = CORSPolicy.Credentials.off
    /// `Host` values the server answers to (see `HostAllowList`); empty allows any. `receive` sets its
    /// own addresses here, against DNS rebinding.
    package var allowedHosts: [String] = []
    /// PBKDF2-SHA256 iterations of new password hashes (CouchDB 3.4's 600,000 unless lowered for tests).
    package var pbkdf2Iterations = AuthLimits.pbkdf2Iterations
    /// CouchDB's `[couchdb] users_db_security_editable`: whether admins may change `_users/_security`
    /// (to open sign-up, for instance). Off by default, as in CouchDB 3.
    package var usersDBSecurityEditable = false
    /// Longest a design function call (one batch) may run before its worker is killed, in ms (CouchDB's
    /// `os_process_timeout`, 5000).
    package var jsTimeoutMilliseconds = 5000
    /// Most JavaScript worker processes at once.
    package var jsWorkers = 4
    /// Most MiB one worker's JavaScript heap may hold.
    package var jsHeapMiB = 256
    /// CPU time, in ms, the `$regex` matches of one `_find` may take together (500 `timeout` past it).
    package var regexBudgetMilliseconds = Int(RegexBudget.defaultNanoseconds / 1_000_000)

    /// The first pause before a crashed `_replicator` job is started again, doubling with each consecutive crash
    /// (CouchDB's scheduler waits 30 s, its `BACKOFF_INTERVAL_MICROS`).
    package var replicatorRetrySeconds = 30
    /// Most `_replicator` jobs running at once; the others wait, `pending` (CouchDB's `[replicator] max_jobs`).
    package var replicatorMaxJobs = ReplicatorSettings.defaultMaxJobs
    /// How often the scheduler rotates waiting jobs in, in ms (CouchDB's `[replicator] interval`).
    package var replicatorIntervalMilliseconds = ReplicatorSettings.defaultIntervalMilliseconds
    /// Most jobs one scheduling pass stops to start waiting ones (CouchDB's `[replicator] max_churn`).
    package var replicatorMaxChurn = ReplicatorSettings.defaultMaxChurn

    package init() {}

    /// Checks combinations of options.
    package func validate() throws(OptionsError) {
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
}

/// Where the HTTPS listener's certificate comes from.
package enum TLSMode: Sendable, Equatable {
    /// No HTTPS.
    case off
    /// A self-signed certificate generated in the data dir on first start and renewed near its expiry.
    case auto
    /// PEM files given on the command line.
    case files(certificate: String, key: String)

    package var certificateFile: String? { if case .files(let file, _) = self { file } else { nil } }
    package var keyFile: String? { if case .files(_, let file) = self { file } else { nil } }
    package var isOn: Bool { self != .off }
}

/// A configuration mistake; the command line prints it on stderr and exits 64 (EX_USAGE).
package struct OptionsError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
