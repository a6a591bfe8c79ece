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
        // From here (not while it asks for a code), Ctrl-C stops the push and says what arrived.
        let tally = PushTally()
        let running = RunningReplication()
        stopPushOnInterrupt(tally, running, display)
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
            for photo in photos {
                if tally.interrupted.load(ordering: .relaxed) {
                    display.message(
                        "push: interrupted before sending anything: nothing is on \(target.display) yet; "
                            + "run the same command again to send the \(photos.count) photos and videos")
                    return 130
                }
                if try outbox.add(photo) { added += 1 }
            }
            display.message(
                "push: \(photos.count) photos and videos in \(positional[0]), \(added) new in the outbox"
                    + skipped(scan.notMedia))
            let transfer = Transfer(
                outbox: outbox, photos: photos, target: target, display: display, tally: tally,
                notMedia: scan.notMedia)
            return try transfer.send(app: app, running: running)
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

    /// `; 2 skipped: not media (notes.jpg, old/readme.jpg)`: the files named like photos that are not, at most five
    /// by name; nothing when there are none.
    static func skipped(_ notMedia: [String]) -> String {
        guard !notMedia.isEmpty else { return "" }
        let shown = notMedia.prefix(5).joined(separator: ", ") + (notMedia.count > 5 ? ", …" : "")
        return "; \(notMedia.count) skipped: not media (\(shown))"
    }

    /// The first Ctrl-C (or SIGTERM) stops the push where it is, keeping what arrived: the file being sent ends
    /// at the next megabyte, the replication after a checkpoint; the second one cancels the replication, or ends the
    /// process at once when it is stuck elsewhere (a stalled connection).
    private static func stopPushOnInterrupt(
        _ tally: PushTally, _ running: RunningReplication, _ display: ProgressDisplay
    ) {
        StopSignals.onStop { _ in
            let replication = running.slot.withLock { $0 }
            guard !tally.interrupted.exchange(true, ordering: .relaxed) else {
                guard let replication else {
                    display.message("push: stopped; run the same command again to send the rest")
                    _exit(130)
                }
                return replication.cancel()
            }
            if let replication {
                replication.stop()
                DispatchQueue.global().asyncAfter(deadline: .now() + 10) { replication.cancel() }
            }
        }
    }

    /// One push's sending: the big files through a couchlite receiver's resumable uploads, then the replication,
    /// with one progress display over both (photos and bytes the peer lacked), and on Ctrl-C one line saying what
    /// arrived and what to run next.
    struct Transfer {
        let outbox: Outbox
        let photos: [PhotoScanner.Photo]
        let target: Endpoint
        let display: ProgressDisplay
        let tally: PushTally
        /// Files named like photos whose bytes are not (`PhotoScanner.Scan.notMedia`), said at the end.
        var notMedia: [String] = []

        /// Sends what the peer lacks; the exit status.
        func send(app: App, running: RunningReplication) throws -> Int32 {
            let contents = try outbox.contents()
            let missing = try missingOnPeer(contents, target)
            let totalBytes = contents.filter { missing.contains($0.id) }.reduce(0) { $0 + $1.size }
            let stats = Mutex<ReplicationStats?>(nil)
            let show = { (final: Bool) in
                let replicated = stats.withLock { $0 }
                let files = tally.files.load(ordering: .relaxed)
                let done = min(missing.count, files + (replicated?.docsWritten ?? 0))
                let bytes = min(totalBytes, tally.bytes + (replicated?.attachmentBytes ?? 0))
                display.show(photos: done, of: missing.count, bytes: bytes, of: totalBytes, final: final)
            }
            // A couchlite receiver takes the big files resumably first; the replication then finds them there.
            if ResumablePush.supported(by: target) {
                let resumable = ResumablePush(target: target, outbox: outbox, display: display, tally: tally)
                let (photos, missing) = (self.photos, missing)
                do {
                    try Commands.showing({ show(false) }) { try resumable.send(photos, missing: missing) }
                } catch is PushInterrupted {
                    show(true)
                    return interrupted(missing: missing.count, totalBytes: totalBytes, replicated: nil)
                }
            }
            var options = ReplicationOptions()
            options.createTarget = true
            options.replicatorIdentity = app.serverUUID
            options.batchSize = 100
            options.checkpointDocs = 20
            options.checkpointInterval = .seconds(5)
            let replication = Replication(source: outbox.endpoint, target: target, options: options)
            running.slot.withLock { $0 = replication }
            if tally.interrupted.load(ordering: .relaxed) { replication.stop() }
            let outcome = Result { () throws(ReplicationError) in
                try Commands.showing({
                    stats.withLock { $0 = replication.stats }
                    show(false)
                }) { () throws(ReplicationError) in try replication.run() }
            }
            running.slot.withLock { $0 = nil }
            stats.withLock { $0 = replication.stats }
            let final = replication.stats
            show(true)
            if tally.interrupted.load(ordering: .relaxed), outcome.isSuccess || outcome.isCancelled {
                return interrupted(missing: missing.count, totalBytes: totalBytes, replicated: final)
            }
            switch outcome {
            case .success:
                if final.docWriteFailures > 0 {
                    display.message("couchlite push: the peer refused \(final.docWriteFailures) photos")
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
                display.message(
                    "push: all \(contents.count) photos are on \(target.display)" + Commands.skipped(notMedia))
                return 0
            case .failure(.cancelled):
                return interrupted(missing: missing.count, totalBytes: totalBytes, replicated: final)
            case .failure(let error):
                display.message("couchlite push: \(error.description)")
                return exitStatus(error)
            }
        }

        /// The line a stopped push ends with: what is on the peer, what of a file in flight it keeps, what to run.
        private func interrupted(missing: Int, totalBytes: Int, replicated: ReplicationStats?) -> Int32 {
            let files = tally.files.load(ordering: .relaxed)
            let done = min(missing, files + (replicated?.docsWritten ?? 0))
            let bytes = min(totalBytes, tally.bytes + (replicated?.attachmentBytes ?? 0))
            var text =
                "push: interrupted: \(done) of the \(missing) photos and videos it was sending "
                + "(\(ProgressDisplay.size(bytes)) of \(ProgressDisplay.size(totalBytes))) are on \(target.display)"
            if let partial = tally.partial, partial.bytes > 0 {
                text +=
                    "; the first \(ProgressDisplay.size(partial.bytes)) of \(partial.name) arrived and are kept there"
            }
            text += "; run the same command again to send the rest (it goes on from there)"
            display.message(text)
            return 130
        }

        private func missingOnPeer(
            _ contents: [(id: String, rev: String, size: Int)], _ target: Endpoint, confirming: Bool = false
        ) throws -> Set<String> {
            try Commands.missingOnPeer(contents, target, confirming: confirming)
        }
    }

    /// Runs `work` on a thread of its own while `tick` runs every 0.1 s on this one; `work`'s outcome.
    static func showing<T: Sendable, Failure: Error>(
        _ tick: () -> Void, _ work: @escaping @Sendable () throws(Failure) -> T
    ) throws(Failure) -> T {
        let outcome = Mutex<Result<T, Failure>?>(nil)
        let thread = Thread {
            let result = Result { () throws(Failure) in try work() }
            outcome.withLock { $0 = result }
        }
        thread.stackSize = 1 << 20
        thread.start()
        while true {
            if let result = outcome.withLock({ $0 }) { return try result.get() }
            tick()
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    /// The most bytes a `_revs_diff` reply may have (the replicator's own limit for it).
    static let missingReplyLimit = 16 << 20

    /// The outbox documents the peer lacks (`_revs_diff`); all of them when the database is not there yet
    /// (unless `confirming` a push, when that is an error). The reply is bounded like the replicator's
    /// (`missingReplyLimit` bytes, parsed within the server's budget) and must be an object.
    static func missingOnPeer(
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

/// The replication a push is running, for its Ctrl-C handler.
final class RunningReplication: Sendable {
    let slot = Mutex<Replication?>(nil)
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}

extension Result where Failure == ReplicationError {
    var isCancelled: Bool { if case .failure(.cancelled) = self { true } else { false } }
}
