import Callbacks
import CouchCrypto
import CouchServer
import CouchStore
import CouchWire
import Dispatch
import Foundation
import MediaSandbox
import Synchronization

/// One run of `couchlite receive`: the ordinary server around a drop database, one-time credentials for it,
/// their URL as text and QR code, and the photos exported to a folder until the session ends.
package final class ReceiveSession: Sendable {
    /// Why a session ended.
    enum End: String, Sendable {
        case expired = "the credentials expired"
        case completed = "the push is complete"
        case interrupted = "interrupted"
    }

    /// The one-time credentials and where they work.
    struct Credentials: Sendable {
        let user: String
        let password: String
        let url: String
        /// The URL for apps (Couchbase Lite, PouchDB, `couchlite push`): `url`, plus `#sha256=<fingerprint>` with
        /// `--qr-pin`; what the QR code carries with `--qr app`.
        let appURL: String
        /// The drop page's address for a sign-in token: the phone's QR code is this plus the current token.
        let signInBase: String
        /// The HTTPS certificate's fingerprint, for the sender to compare (nil without TLS).
        let fingerprint: TLSFingerprint?
        /// The gallery's drop page, where a browser signs in with `user` and `password` to send photos.
        let browser: String
        let expires: Date
        /// What the credentials have written (bytes stored and refused for `--max-size`).
        let ledger: DropLedger
    }

    let options: ReceiveOptions
    let log: Logger
    /// The short code shown beside the QR code, which `couchlite push --to NAME` trades for the credentials.
    let pairing = PairingCode()
    /// The one-time token in the phone's QR code, which signs one browser in to the drop page.
    let signIn = SignInTokens()
    private let interrupted = Mutex(false)

    package init(options: ReceiveOptions) {
        self.options = options
        self.log = Logger(label: "couchlite", level: options.server.logLevel, format: options.server.logFormat)
    }

    /// Runs the session to its end. - Returns: the exit status.
    package func run() -> Int32 {
        var serverOptions = options.server
        let candidates = LANAddresses.candidates()
        serverOptions.bind = options.bind ?? candidates.first?.address ?? "127.0.0.1"
        // Without --bind, every LAN address is served on the one port; the URL names the likeliest.
        let extraHosts = options.bind == nil ? candidates.dropFirst().map(\.address) : []
        ServerProcess.prepareProcess()
        StopSignals.onStop { [self] _ in interrupted.withLock { $0 = true } }
        let process: ServerProcess
        let database: Database
        let exporter: PhotoExporter
        let progress = ReceiveProgress(handle: options.json ? .standardError : .standardOutput)
        var started: ServerProcess?
        do {
            process = try ServerProcess(
                options: serverOptions, log: log, extraHosts: extraHosts,
                product: { [pairing, signIn, database = options.database] services in
                    GalleryRoutes.make(services) + [
                        PairingRoutes(code: pairing, database: database),
                        SignInRoutes(tokens: signIn, database: database, services: services),
                    ]
                })
            started = process
            let app = process.app
            app.hosts.answerOnly(
                hosts: ([serverOptions.bind] + extraHosts).flatMap { bind in
                    [process.port, process.tlsPort].compactMap { $0 }.flatMap {
                        ReceiveSession.hostNames(bind: bind, port: $0)
                    }
                })
            database = try ReceiveSession.openOrCreate(options.database, app)
            // After the server took the data dir's lock: a process refused for a dir in use makes no folder.
            let folder = try PhotoFolder(path: options.out)
            let out = options.out
            app.onDiskFull.set { progress.diskFull(in: "the data dir") }
            exporter = PhotoExporter(
                database: database, blobs: try app.blobRegistry.store(for: database.name), folder: folder, log: log,
                media: MediaSandbox(),
                onDiskFull: { full in full ? progress.diskFull(in: out) : progress.spaceAvailable() }
            ) { totals, file, bytes in
                progress.saved(totals, file: file, bytes: bytes)
            }
            try exporter.start()
        } catch let held as DataDirLock.Held {
            log.error("could not start", ["error": held.description])
            return 75  // EX_TEMPFAIL: it may work once the other process has stopped
        } catch {
            log.error("could not start", ["error": String(describing: error)])
            // Stopped before the exit: its threads must not run while the process tears down (a bad `--out` once
            // exited with them running, and was killed by SIGSEGV in their teardown about one run in six).
            if let started {
                started.shutdown(timeout: .seconds(1))
                started.waitUntilStopped()
                started.app.store.close()
            }
            return 1
        }
        if let generated = process.generatedAdmin {
            // As `serve` does: shown once, only the hash is kept.
            report(
                "couchlite: no server admin was configured, so one was created (shown only once):\n"
                    + "  name: \(generated.name)   password: \(generated.password)\n")
        }
        let credentials = makeCredentials(process)
        do {
            try announce(credentials, process: process, others: extraHosts)
        } catch {
            log.error("could not write the QR code", ["error": String(describing: error)])
            process.shutdown(timeout: .seconds(1))
            exporter.drainAndStop()
            process.app.store.close()
            return 1
        }
        let stopAnnouncing = startAnnouncing(process, others: extraHosts)
        let end = waitForEnd(credentials, process.app, database, exporter)
        // Goodbyes first: peers drop the entry at once, before the closing grace and the shutdown.
        stopAnnouncing()
        pairing.close()
        signIn.close()
        process.app.dropAccounts.revoke(credentials.user)
        progress.finish()
        report("couchlite receive: session ended (\(end.rawValue)); the one-time credentials no longer work.\n")
        if end != .interrupted { Thread.sleep(forTimeInterval: Double(ReceiveLimits.closingGraceSeconds)) }
        process.shutdown(timeout: .seconds(options.server.shutdownTimeoutSeconds))
        process.waitUntilStopped()
        exporter.drainAndStop()
        progress.finish()
        printSummary(exporter.totals, refused: credentials.ledger.bytes.refused)
        process.app.store.close()
        return 0
    }

    // MARK: Steps

    /// The `Host` values a client of this address sends: the address and port as printed (and, on loopback,
    /// the names loopback goes by). Binding every address (`0.0.0.0`, `::`) leaves any host allowed.
    static func hostNames(bind: String, port: Int) -> [String] {
        if bind == "0.0.0.0" || bind == "::" || bind == "[::]" { return [] }
        var names = [(bind.contains(":") ? "[\(bind)]" : bind) + ":\(port)"]
        if bind == "127.0.0.1" || bind == "::1" || bind == "localhost" {
            names += ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"]
        }
        return names
    }

    static func openOrCreate(_ name: String, _ app: App) throws -> Database {
        if let existing = try? app.store.open(name) { return existing }
        let database = try app.store.create(name)
        app.access.security.reset(name)
        return database
    }

    private func makeCredentials(_ process: ServerProcess) -> Credentials {
        let accounts = process.app.dropAccounts
        var user: String
        repeat {
            user = "drop-" + Secrets.randomBytes(ReceiveLimits.nameBytes).hexString
        } while process.app.isServerAdmin(user) || accounts.contains(user)
        let password = Secrets.randomBytes(ReceiveLimits.passwordBytes).hexString
        let seconds = options.ttl.timeInterval
        let ledger = accounts.add(
            name: user, password: Array(password.utf8), database: options.database, expires: .now + options.ttl,
            httpsOnly: process.tlsPort != nil,
            maxBytes: options.maxSize ?? ReceiveOptions.defaultMaxSize(of: process.app.options.dataDir))
        let bind = process.app.options.bind
        let host = bind.contains(":") ? "[\(bind)]" : bind
        let scheme = process.tlsPort == nil ? "http" : "https"
        let port = process.tlsPort ?? process.port ?? 0
        let url = "\(scheme)://\(user):\(password)@\(host):\(port)/\(PercentEncoding.segment(options.database))"
        let fingerprint = process.tlsCertificate?.fingerprint
        let appURL = options.qrPin ? url + (fingerprint.map { "#sha256=\($0.hex)" } ?? "") : url
        pairing.open(user: user, password: password, httpsOnly: process.tlsPort != nil)
        let expires = Date().addingTimeInterval(seconds)
        signIn.open(
            user: user, httpsOnly: process.tlsPort != nil,
            facts: SignInTokens.Facts(
                expires: ISO8601DateFormatter().string(from: expires), fingerprint: fingerprint?.colonHex))
        return Credentials(
            user: user, password: password, url: url, appURL: appURL,
            signInBase: "\(scheme)://\(host):\(port)/_photos/#signin=", fingerprint: fingerprint,
            browser: "\(scheme)://\(host):\(port)/_photos/",
            expires: expires, ledger: ledger)
    }

    /// What the QR code carries: the phone's sign-in link with `token`, or the apps' URL with `--qr app`.
    func qrURL(_ credentials: Credentials, token: String) -> String {
        options.qr == .app ? credentials.appURL : credentials.signInBase + token
    }

    /// Writes `--qr-png` (atomically, so a viewer never reads half an image).
    private func writePNG(_ code: QRCode) throws {
        guard let path = options.qrPNG else { return }
        try Data(code.png()).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    private var terminalColors: Bool {
        let environment = ProcessInfo.processInfo.environment
        return isatty(STDOUT_FILENO) == 1 && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
    }

    /// Prints the URL (one JSON line with `--json`, else text and the QR code) and writes `--qr-png`.
    private func announce(_ credentials: Credentials, process: ServerProcess, others: [String]) throws {
        let token = signIn.current
        let qrURL = qrURL(credentials, token: token)
        guard let code = QRCode.encode(qrURL) else {
            throw ExportError.unreadable("URL too long for a QR code")
        }
        try writePNG(code)
        if options.qr == .phone { watchSignIns(credentials) }
        let out = URL(fileURLWithPath: options.out).standardizedFileURL.path
        let expires = ISO8601DateFormatter().string(from: credentials.expires)
        if options.json {
            let line: JSON = .object(
                JSONObject(
                    [
                        ("url", .string(credentials.url)), ("user", .string(credentials.user)),
                        ("expires", .string(expires)), ("db", .string(options.database)), ("out", .string(out)),
                        ("browser", .string(credentials.browser)), ("code", .string(pairing.display)),
                        ("signin_url", .string(credentials.signInBase + token)), ("qr_url", .string(qrURL)),
                        ("app_url", .string(credentials.appURL)),
                    ]
                        + (credentials.fingerprint.map { [("fingerprint_sha256", .string($0.colonHex))] } ?? [])))
            ReceiveSession.printOut(String(decoding: line.serialized(), as: UTF8.self) + "\n")
            report(tradeOff(process))
            return
        }
        var text: String
        if options.qr == .phone {
            text = "couchlite receive: scan the QR code with a phone's camera to send it photos\n\n  \(qrURL)\n\n"
            text += code.terminalText(colors: terminalColors)
            text += "\n  The code signs in one phone (no typing); then a new one is shown here for the next phone.\n"
        } else {
            text = "couchlite receive: send photos to\n\n  \(qrURL)\n\n"
            text += code.terminalText(colors: terminalColors)
        }
        if let fingerprint = credentials.fingerprint {
            // Beside the code, for the sender to compare with what its browser or client shows before trusting it.
            text += "\n  certificate SHA-256 fingerprint (the phone's browser shows it on its warning page, under the\n"
            text += "  certificate's details; compare them before going on):\n  \(fingerprint.colonHex)\n"
        }
        text += "\nFor apps (Couchbase Lite, PouchDB, a CouchDB replication, couchlite push DIR URL):\n"
        text += "  \(options.qr == .phone ? credentials.appURL : credentials.url)\n"
        if process.tlsPort != nil { text += "  code for couchlite push --to: \(pairing.display)\n" }
        text += "Photos are saved in \(out) as they arrive.\n"
        if options.announce && process.tlsPort != nil {
            let name = options.name ?? ReceiveSession.machineName()
            text += "From a machine on this LAN: couchlite push DIR --to \"\(name)\" and type the code above\n"
            text += "(\(PairingCode.maxWrongCodes) wrong codes and it stops working; the URL and the QR code "
            text += "still do).\n"
        } else if options.announce {
            text += "With --tls auto, couchlite push DIR --to NAME finds this drop by its name on the LAN.\n"
        }
        text += "From a browser without the QR code: open \(credentials.browser) and sign in with the name\n"
        text += "\(credentials.user) and the password \(credentials.password).\n"
        text += "The credentials work only for the database \(options.database) and expire at \(expires)"
        text += options.once ? " or when the first push is complete.\n" : ".\n"
        if !others.isEmpty {
            let port = process.tlsPort ?? process.port ?? 0
            let hosts = others.map { ($0.contains(":") ? "[\($0)]" : $0) + ":\(port)" }
            text += "The same credentials also work at \(hosts.joined(separator: ", ")) (choose one with --bind).\n"
        }
        text += tradeOff(process)
        text += "Press Ctrl-C to stop.\n\n"
        ReceiveSession.printOut(text)
    }

    /// What the session's transport gives away, said plainly at start: plain HTTP (the default, so a phone opens
    /// the page without a certificate warning) or HTTPS with a self-signed certificate (one warning to get past).
    func tradeOff(_ process: ServerProcess) -> String {
        if process.tlsPort == nil {
            return "Plain HTTP (the default, so a phone opens the page with no certificate warning): anyone who can\n"
                + "watch this network's traffic sees the photos sent and can use a sign-in to add files to this drop\n"
                + "(never to read or delete any). On a network you do not trust, use --tls auto.\n"
        }
        return "HTTPS with a self-signed certificate: the phone's browser warns once; compare the fingerprint above\n"
            + "with the one it shows before going on. The sign-in, the credentials and the photos travel encrypted.\n"
    }

    /// After each sign-in by token, shows the QR code of the next token (and rewrites `--qr-png`); says so when
    /// too many wrong tokens closed sign-in by token.
    private func watchSignIns(_ credentials: Credentials) {
        signIn.onUse.set { [self] token in
            let url = qrURL(credentials, token: token)
            guard let code = QRCode.encode(url) else { return }
            do {
                try writePNG(code)
            } catch {
                log.warning("could not rewrite the QR code", ["error": String(describing: error)])
            }
            if options.json {
                report("couchlite receive: a phone signed in; the QR code for the next one: \(url)\n")
            } else {
                var text = "\ncouchlite receive: a phone signed in. The QR code for the next phone:\n\n  \(url)\n\n"
                text += code.terminalText(colors: terminalColors) + "\n"
                report(text)
            }
        }
        signIn.onSpent.set { [self] _ in
            report(
                "couchlite receive: \(SignInTokens.maxWrongTokens) wrong sign-in links were tried: the QR code no "
                    + "longer signs phones in.\nSign in with the name and password above instead.\n")
        }
    }

    private func waitForEnd(_ credentials: Credentials, _ app: App, _ database: Database, _ exporter: PhotoExporter)
        -> End
    {
        let deadline = ContinuousClock.now + options.ttl
        let quiet = Duration.seconds(ReceiveLimits.onceQuietSeconds)
        while true {
            Thread.sleep(forTimeInterval: Double(ReceiveLimits.pollMilliseconds) / 1000)
            if interrupted.withLock({ $0 }) { return .interrupted }
            let now = ContinuousClock.now
            if now >= deadline { return .expired }
            guard options.once, let activity = app.dropAccounts.activity(of: credentials.user),
                activity.checkpointed, activity.inFlight == 0, let last = activity.lastEnded, now - last >= quiet,
                exporter.exportedSeq >= database.updateSeq
            else { continue }
            return .completed
        }
    }

    private func printSummary(_ totals: PhotoExporter.Totals, refused: Int) {
        var text = "Saved \(totals.photos) photo\(totals.photos == 1 ? "" : "s") "
        text +=
            "(\(ReceiveProgress.size(totals.bytes))) in \(URL(fileURLWithPath: options.out).standardizedFileURL.path)"
        if totals.duplicates > 0 { text += "; \(totals.duplicates) already there" }
        if totals.failures > 0 { text += "; \(totals.failures) could not be saved (see the log)" }
        if refused > 0 { text += "; \(ReceiveProgress.size(refused)) refused (past --max-size)" }
        text += ".\n"
        if totals.kept > 0 {
            text += "Kept in the database, not saved to the folder: \(totals.kept) attachment"
            text += totals.kept == 1 ? ":\n" : "s:\n"
            text += totals.keptNames.map { "  \($0)\n" }.joined()
            if totals.kept > totals.keptNames.count { text += "  and \(totals.kept - totals.keptNames.count) more\n" }
        }
        report(text)
    }

    /// Human-readable lines: on stdout, or on stderr with `--json` (stdout is then the one JSON line).
    private func report(_ text: String) {
        if options.json {
            FileHandle.standardError.write(Data(text.utf8))
        } else {
            ReceiveSession.printOut(text)
        }
    }

    /// What `receive` prints for the person or the script that started it (stdout; progress goes to stderr).
    private static func printOut(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
