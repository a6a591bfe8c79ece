import CouchServer
import CouchWire
import Discovery
import Dispatch
import Foundation
import PhotoDrop
import Replicator
import Synchronization

extension Commands {
    /// What `couchlite push`'s command line sets.
    struct PushSettings: Sendable {
        var scanner = PhotoScanner()
        var dataDir = "./data"
        var outbox = "outbox"
        var folderAndURL: [String] = []
        var tls = TLSFlags()
        /// `--to NAME`: the drop announced on the LAN under this name, instead of a URL.
        var to: String?
        /// `--code CODE`: the short code the receiver shows (asked for on the terminal when not given).
        var code: String?
    }

    static let pushCommandLine = OptionTable<PushSettings>(
        summary: """
            usage: couchlite push DIR URL [options]
                   couchlite push DIR --to NAME [--code CODE] [options]

            Sends every photo and video under DIR (recursively) to URL, the database URL a receiver
            prints (couchlite receive, a PhotoDrop phone, CouchDB), or to the couchlite receive announced
            on the LAN as NAME (exactly, as couchlite peers lists it): its announcement gives the URL and
            pins its TLS certificate, and the short code its screen shows (asked for, or --code) gets the
            one-time credentials; finding a drop grants nothing without the code. Each file becomes one
            document {"type":"photo","name","taken","size"} in a local outbox database, its id from the
            file's content hash, the file its attachment. Run it again after an interruption: only what did
            not arrive is sent.
            """,
        specs: [
            .init(flag: "--include", valueName: "GLOB", help: "only files matching GLOB (path or name; repeatable)") {
                $0.scanner.includes.append($1)
            },
            .init(flag: "--exclude", valueName: "GLOB", help: "skip files matching GLOB (repeatable)") {
                $0.scanner.excludes.append($1)
            },
            .text(
                "--data-dir", environment: "COUCHLITE_DATA_DIR", valueName: "DIR",
                help: "where the outbox lives, default ./data", needs: "a directory"
            ) { $0.dataDir = $1 },
            .text("--outbox", valueName: "NAME", help: "the outbox database, default outbox", needs: "a database name")
            {
                $0.outbox = $1
            },
            .text(
                "--to", valueName: "NAME", help: "send to the drop announced on the LAN as NAME (instead of a URL)",
                needs: "a drop's name"
            ) { $0.to = $1 },
            .text(
                "--code", valueName: "CODE",
                help: "with --to: the code the receiver shows (asked for on the terminal when left out)",
                needs: "a code like ABCD-2345"
            ) { $0.code = $1 },
        ] + TLSFlags.specs.map { $0.lifted(\PushSettings.tls) },
        footer: """
            exit status: 0 everything is on the peer, 77 wrong user name or password (or code), 69 peer
            unreachable, 76 the peer's certificate was refused (or TLS failed, or a --to drop's certificate
            is not the one it announced), 68 no drop of that name on the LAN, 65 several announce that name,
            74 a disk is full, 75 another couchlite uses the data dir, 130 interrupted, 1 anything else,
            64 bad usage.
            """)

    /// `couchlite push DIR URL`.
    public static func push(arguments: [String], environment: [String: String]) -> Int32 {
        let settings: PushSettings
        let entry = pushCommandLine.enter(
            arguments, environment: environment, into: PushSettings(), positional: { $0.folderAndURL.append($1) }
        ) { s throws(OptionsError) in
            if s.to != nil {
                guard s.folderAndURL.count == 1 else { throw OptionsError("push --to NAME needs a DIR and no URL") }
                guard s.tls.trust.isDefault else {
                    throw OptionsError(
                        "--to pins the certificate the drop announces; --pin, --cacert and --insecure do not apply")
                }
                return
            }
            guard s.code == nil else { throw OptionsError("--code goes with --to NAME") }
            guard s.folderAndURL.count == 2 else { throw OptionsError("push needs a DIR and a URL (or --to NAME)") }
            guard Endpoint.isURL(s.folderAndURL[1]) else {
                throw OptionsError("\(s.folderAndURL[1]) is not an http:// or https:// URL")
            }
            try s.tls.check(urls: [s.folderAndURL[1]])
        }
        switch entry {
        case .run(let parsed): settings = parsed
        case .exit(let status): return status
        }
        var positional = settings.folderAndURL
        let display = ProgressDisplay()
        if let name = settings.to {
            switch findDrop(named: name, code: settings.code, display: display) {
            case .success(let url): positional.append(url)
            case .failure(let failure): return failure.status
            }
        }
        let scanner = settings.scanner
        let dataDir = settings.dataDir
        let outboxName = settings.outbox
        let app: App
        do {
            app = try LocalApp.open(dataDir: dataDir, log: Logger(label: "couchlite", level: .warning))
        } catch let held as DataDirLock.Held {
            printError(held.description)
            return dataDirInUse
        } catch {
            printError("cannot open the data dir \(dataDir): \(error)")
            return 1
        }
        defer { LocalApp.close(app) }
        do {
            let target = try settings.tls.endpoint(positional[1], warn: { display.message("couchlite push: \($0)") })
            let outbox = Outbox(endpoint: app.localEndpoint(outboxName))
            try outbox.create()
            let scan = try scanner.scanAll(positional[0])
            let photos = scan.photos
            var added = 0
            for photo in photos where try outbox.add(photo) { added += 1 }
            display.message(
                "push: \(photos.count) photos and videos in \(positional[0]), \(added) new in the outbox"
                    + skipped(scan.notMedia))
            return try send(outbox, photos, to: target, app: app, display: display, notMedia: scan.notMedia)
        } catch let error as PushError {
            display.message("couchlite push: \(error.description)")
            if case .usage = error { return 64 }
            if case .diskFull = error { return 74 }
            return 1
        } catch let error as ReplicationError {
            display.message("couchlite push: \(error.description)")
            return exitStatus(error)
        } catch {
            display.message("couchlite push: \(error)")
            return 1
        }
    }

    /// Replicates the outbox to the peer with a progress display; counts only what the peer lacks.
    /// `; 2 skipped: not media (notes.jpg, old/readme.jpg)`: the files named like photos that are not, at most five
    /// by name; nothing when there are none.
    static func skipped(_ notMedia: [String]) -> String {
        guard !notMedia.isEmpty else { return "" }
        let shown = notMedia.prefix(5).joined(separator: ", ") + (notMedia.count > 5 ? ", …" : "")
        return "; \(notMedia.count) skipped: not media (\(shown))"
    }

    private static func send(
        _ outbox: Outbox, _ photos: [PhotoScanner.Photo], to target: Endpoint, app: App, display: ProgressDisplay,
        notMedia: [String]
    ) throws -> Int32 {
        let contents = try outbox.contents()
        let missing = try missingOnPeer(contents, target)
        // A couchlite receiver takes the big files resumably first; the replication then finds them there.
        if ResumablePush.supported(by: target) {
            try ResumablePush(target: target, outbox: outbox, display: display).send(photos, missing: missing)
        }
        let totalBytes = contents.filter { missing.contains($0.id) }.reduce(0) { $0 + $1.size }
        var options = ReplicationOptions()
        options.createTarget = true
        options.replicatorIdentity = app.serverUUID
        options.batchSize = 100
        options.checkpointDocs = 20
        options.checkpointInterval = .seconds(5)
        let replication = Replication(source: outbox.endpoint, target: target, options: options)
        stopOnInterrupt(replication)
        let outcome = Mutex<Result<JSON, ReplicationError>?>(nil)
        let thread = Thread {
            let result = Result { () throws(ReplicationError) in try replication.run() }
            outcome.withLock { $0 = result }
        }
        thread.stackSize = 1 << 20
        thread.start()
        while outcome.withLock({ $0 }) == nil {
            let stats = replication.stats
            display.show(
                photos: min(stats.docsWritten, missing.count), of: missing.count,
                bytes: min(stats.attachmentBytes, totalBytes),
                of: totalBytes)
            Thread.sleep(forTimeInterval: 0.1)
        }
        let stats = replication.stats
        switch outcome.withLock({ $0 }) {
        case .success?:
            display.show(
                photos: min(stats.docsWritten, missing.count), of: missing.count,
                bytes: min(stats.attachmentBytes, totalBytes),
                of: totalBytes, final: true)
            if stats.docWriteFailures > 0 {
                display.message("couchlite push: the peer refused \(stats.docWriteFailures) photos")
                return 1
            }
            // Only the peer's word counts: it must list none of the photos as missing any more.
            let unconfirmed = try missingOnPeer(contents, target, confirming: true)
            guard unconfirmed.isEmpty else {
                display.message(
                    "couchlite push: the server at \(target.redacted) does not confirm \(unconfirmed.count) of the "
                        + "\(contents.count) photos; run the same command again to send them")
                return 1
            }
            display.message("push: all \(contents.count) photos are on \(target.display)" + skipped(notMedia))
            return 0
        case .failure(.cancelled)?:
            display.message(
                "push: interrupted after \(stats.docsWritten) photos; run the same command again to send the rest")
            return 130
        case .failure(let error)?:
            display.message("couchlite push: \(error.description)")
            return exitStatus(error)
        case nil:
            return 1
        }
    }

    /// The most bytes a `_revs_diff` reply may have (the replicator's own limit for it).
    static let missingReplyLimit = 16 << 20

    /// The outbox documents the peer lacks (`_revs_diff`); all of them when the database is not there yet
    /// (unless `confirming` a push, when that is an error). The reply is bounded like the replicator's
    /// (`missingReplyLimit` bytes, parsed within the server's budget) and must be an object.
    private static func missingOnPeer(
        _ contents: [(id: String, rev: String, size: Int)], _ target: Endpoint, confirming: Bool = false
    ) throws -> Set<String> {
        guard !contents.isEmpty else { return [] }
        let query = JSON.object(JSONObject(contents.map { ($0.id, .array([.string($0.rev)])) }))
        let response = try target.client.send(target.request("POST", "/_revs_diff", json: query))
        switch response.status {
        case 200:
            let reply = try response.json(limit: missingReplyLimit)
            guard case .object(let entries) = reply else {
                throw ReplicationError.protocolError(
                    "the server at \(target.redacted) answered _revs_diff with \(Replication.kind(reply)), not an object"
                )
            }
            let asked = Set(contents.map(\.id))
            return Set(entries.keys).intersection(asked)
        case 404 where !confirming:
            response.discard()
            return Set(contents.map(\.id))
        case 401: throw ReplicationError.unauthorized(target.display)
        case 403: throw ReplicationError.forbidden(target.display)
        default:
            response.discard()
            throw ReplicationError.httpStatus(response.status, "\(target.display)_revs_diff")
        }
    }
}
