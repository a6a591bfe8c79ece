import CouchServer
import CouchWire
import Dispatch
import Foundation
import PhotoDrop
import Replicator
import Synchronization

extension Commands {
    /// What `couchlite replicate`'s command line sets.
    struct ReplicateSettings: Sendable {
        var options = ReplicationOptions()
        var dataDir = "./data"
        var sourceAndTarget: [String] = []
        var tls = TLSFlags()
    }

    static let replicateCommandLine = OptionTable<ReplicateSettings>(
        summary: """
            usage: couchlite replicate SOURCE TARGET [options]

            Replicates SOURCE into TARGET once (or continuously). Each is a database URL
            (http://user:pass@host:5984/db, https://…[#sha256=FINGERPRINT]) or the name of a
            database in --data-dir.
            """,
        specs: [
            .toggle("--continuous", help: "keep following SOURCE until interrupted (Ctrl-C)") {
                $0.options.continuous = $1
            },
            .toggle("--create-target", help: "create TARGET if it does not exist") { $0.options.createTarget = $1 },
            .init(flag: "--doc-ids", valueName: "ID,ID,...", help: "only these documents") {
                $0.options.docIDs = $1.split(separator: ",").map(String.init)
            },
            .init(flag: "--selector", valueName: "JSON", help: "only documents matching this Mango selector") {
                s, v throws(OptionsError) in
                guard let selector = try? JSON.parse(v), selector.objectValue != nil else {
                    throw OptionsError("--selector needs a JSON object")
                }
                s.options.selector = selector
            },
            .init(
                flag: "--filter", valueName: "DDOC/NAME",
                help: "only documents the source's JavaScript filter function passes"
            ) { s, v throws(OptionsError) in
                // The shape the replicator needs, checked here so that the mistake names the flag.
                let parts = v.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                    throw OptionsError("--filter must look like DDOC/NAME, got '\(v)'")
                }
                s.options.filter = v
            },
            .init(flag: "--query-params", valueName: "JSON", help: "the filter's req.query, a JSON object") {
                s, v throws(OptionsError) in
                guard let params = (try? JSON.parse(v))?.objectValue else {
                    throw OptionsError("--query-params needs a JSON object")
                }
                s.options.queryParams = params
            },
            .init(flag: "--since", valueName: "SEQ", help: "start at this update sequence instead of the checkpoint") {
                $0.options.sinceSeq = (try? JSON.parse($1)) ?? .string($1)
            },
            .integer("--batch-size", help: "_changes rows per batch, default 500", in: 1...Int.max) {
                $0.options.batchSize = $1
            },
            .integer(
                "--checkpoint-docs", help: "checkpoint after every N documents, default 5000 (and every 30 s)",
                in: 1...Int.max
            ) { $0.options.checkpointDocs = $1 },
            .text(
                "--data-dir", environment: "COUCHLITE_DATA_DIR", valueName: "DIR",
                help: "where local databases live, default ./data", needs: "a directory"
            ) { $0.dataDir = $1 },
        ] + TLSFlags.specs.map { $0.lifted(\ReplicateSettings.tls) })

    /// `couchlite replicate SOURCE TARGET …`: prints CouchDB's `_replicate` answer on stdout.
    public static func replicate(arguments: [String], environment: [String: String]) -> Int32 {
        let settings: ReplicateSettings
        let entry = replicateCommandLine.enter(
            arguments, environment: environment, into: ReplicateSettings(),
            positional: { $0.sourceAndTarget.append($1) }
        ) { s throws(OptionsError) in
            guard s.sourceAndTarget.count == 2 else {
                throw OptionsError("replicate needs a SOURCE and a TARGET")
            }
            try s.tls.check(urls: s.sourceAndTarget)
        }
        switch entry {
        case .run(let parsed): settings = parsed
        case .exit(let status): return status
        }
        let positional = settings.sourceAndTarget
        var options = settings.options
        let dataDir = settings.dataDir
        let tls = settings.tls
        let log = Logger(label: "couchlite", level: .warning)
        var app: App?
        defer { if let app { LocalApp.close(app) } }
        func endpoint(_ text: String) throws -> Endpoint {
            if Endpoint.isURL(text) { return try tls.endpoint(text, warn: { printError($0) }) }
            if app == nil { app = try LocalApp.open(dataDir: dataDir, log: log) }
            guard let app else { throw ReplicationError.badRequest("no data dir") }
            return app.localEndpoint(text)
        }
        let replication: Replication
        do {
            let source = try endpoint(positional[0])
            let target = try endpoint(positional[1])
            if let app { options.replicatorIdentity = app.serverUUID }
            replication = try Replication.resolvingFilter(source: source, target: target, options: options)
        } catch let held as DataDirLock.Held {
            printError(held.description)
            return dataDirInUse
        } catch let error as ReplicationError {
            switch error {
            case .filterNotFound:
                printError("--filter: \(error)")
                return 64
            case .badRequest:
                printError("\(error)")
                return 64
            default:
                printError("\(error)")
                return Commands.exitStatus(error)
            }
        } catch {
            printError("\(error)")
            return 1
        }
        printError(
            "replicating \(replication.source.display) -> \(replication.target.display) "
                + "(checkpoint _local/\(replication.replicationID))")
        stopOnInterrupt(replication)
        // What it has written so far, on stderr, once it has run a second: redrawn on a terminal, a line every 10 s
        // when piped; the last figures when it ends, if any were shown.
        let display = ProgressDisplay(lineInterval: 10, quietFor: 1)
        let show = { (final: Bool) in
            if final && !display.hasShown { return }
            let stats = replication.stats
            display.show(
                photos: stats.docsWritten, of: -1, bytes: stats.attachmentBytes, of: -1, noun: "documents",
                final: final)
        }
        do {
            let result = try Commands.showing({ show(false) }) { () throws(ReplicationError) in try replication.run() }
            show(true)
            printOut(result.serializedString + "\n")
            return 0
        } catch .cancelled {
            show(true)
            let written = replication.stats.docsWritten
            display.message(
                "replicate: cancelled after \(written) documents; run the same command again to go on from its "
                    + "last checkpoint")
            return 0
        } catch {
            show(true)
            printError("replication failed: \(error.description)")
            return exitStatus(error)
        }
    }

    /// The exit status for a failure, from sysexits.h, so scripts can tell the cases apart.
    static func exitStatus(_ error: ReplicationError) -> Int32 {
        switch error {
        case .unauthorized, .forbidden: 77  // EX_NOPERM
        case .connectionRefused, .connectionReset, .timeout, .tooSlow, .unreachable: 69  // EX_UNAVAILABLE
        case .insufficientStorage: 74  // EX_IOERR
        case .databaseNotFound: 66  // EX_NOINPUT
        case .certificateRejected, .tlsFailed: 76  // EX_PROTOCOL
        case .badRequest: 64  // EX_USAGE
        default: 1
        }
    }

    /// SIGINT/SIGTERM stop the replication after a checkpoint of what it wrote (a continuous one ends this way);
    /// a second signal, or 10 s without the checkpoint done, cancels it outright.
    static func stopOnInterrupt(_ replication: Replication) {
        let received = SignalCount()
        StopSignals.onStop { _ in
            guard received.value.add(1, ordering: .relaxed).newValue == 1 else { return replication.cancel() }
            replication.stop()
            DispatchQueue.global().asyncAfter(deadline: .now() + 10) { replication.cancel() }
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data("couchlite: \(text)\n".utf8))
    }
}

/// How many stop signals a command has received (the second one is impatient).
private final class SignalCount: Sendable {
    let value = Atomic<Int>(0)
}
