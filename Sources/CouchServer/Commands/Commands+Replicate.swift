import CouchWire
import Dispatch
import Foundation
import Replicator

extension Commands {
    static let replicateUsage = """
        usage: couchlite replicate SOURCE TARGET [options]

        Replicates SOURCE into TARGET once (or continuously). Each is a database URL
        (http://user:pass@host:5984/db) or the name of a database in --data-dir.

        options:
          --continuous              keep following SOURCE until interrupted (Ctrl-C)
          --create-target           create TARGET if it does not exist
          --doc-ids ID,ID,...       only these documents
          --selector JSON           only documents matching this Mango selector
          --filter DDOC/NAME        only documents the source's JavaScript filter function passes
          --query-params JSON       the filter's req.query (a JSON object of strings)
          --since SEQ               start at this update sequence instead of the checkpoint
          --batch-size N            _changes rows per batch (default 500)
          --checkpoint-docs N       checkpoint after every N documents (default 5000; also every 30 s)
          --data-dir DIR            where local databases live [$COUCHLITE_DATA_DIR, default ./data]
          --help                    show this help
        """

    /// `couchlite replicate SOURCE TARGET …`: prints CouchDB's `_replicate` answer on stdout.
    public static func replicate(arguments: [String], environment: [String: String]) -> Int32 {
        var positional: [String] = []
        var options = ReplicationOptions()
        var dataDir = environment["COUCHLITE_DATA_DIR"] ?? "./data"
        var index = 0
        func value(_ flag: String) throws(OptionsError) -> String {
            index += 1
            guard index < arguments.count else { throw OptionsError("\(flag) needs a value") }
            return arguments[index]
        }
        do {
            while index < arguments.count {
                let argument = arguments[index]
                switch argument {
                case "--help", "-h":
                    print(replicateUsage)
                    return 0
                case "--continuous": options.continuous = true
                case "--create-target": options.createTarget = true
                case "--doc-ids":
                    options.docIDs = try value(argument).split(separator: ",").map(String.init)
                case "--selector":
                    guard let selector = try? JSON.parse(try value(argument)), selector.objectValue != nil else {
                        throw OptionsError("--selector needs a JSON object")
                    }
                    options.selector = selector
                case "--filter": options.filter = try value(argument)
                case "--query-params":
                    guard let params = (try? JSON.parse(try value(argument)))?.objectValue else {
                        throw OptionsError("--query-params needs a JSON object")
                    }
                    options.queryParams = params
                case "--since":
                    let text = try value(argument)
                    options.sinceSeq = (try? JSON.parse(text)) ?? .string(text)
                case "--batch-size":
                    guard let size = Int(try value(argument)), size > 0 else {
                        throw OptionsError("--batch-size needs a positive number")
                    }
                    options.batchSize = size
                case "--checkpoint-docs":
                    guard let count = Int(try value(argument)), count > 0 else {
                        throw OptionsError("--checkpoint-docs needs a positive number")
                    }
                    options.checkpointDocs = count
                case "--data-dir": dataDir = try value(argument)
                default:
                    if argument.hasPrefix("-") { throw OptionsError("unknown option '\(argument)'") }
                    positional.append(argument)
                }
                index += 1
            }
            guard positional.count == 2 else { throw OptionsError("replicate needs a SOURCE and a TARGET") }
        } catch {
            printUsageError(String(describing: error), usage: replicateUsage)
            return 64
        }
        let log = Logger(label: "couchlite", level: .warning)
        var app: App?
        defer { if let app { LocalApp.close(app) } }
        func endpoint(_ text: String) throws -> Endpoint {
            if Endpoint.isURL(text) { return try Endpoint.remote(url: text) }
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
        } catch let error as ReplicationError {
            printError("\(error)")
            switch error {
            case .badRequest, .filterNotFound: return 64
            default: return Commands.exitStatus(error)
            }
        } catch {
            printError("\(error)")
            return 1
        }
        printError(
            "replicating \(replication.source.display) -> \(replication.target.display) "
                + "(checkpoint _local/\(replication.replicationID))")
        let signals = cancelOnInterrupt(replication)
        defer { withExtendedLifetime(signals) {} }
        do {
            let result = try replication.run()
            printOut(result.serializedString + "\n")
            return 0
        } catch .cancelled {
            return 0
        } catch {
            printError("replication failed: \(error.description)")
            return exitStatus(error)
        }
    }

    /// The exit status for a failure, from sysexits.h, so scripts can tell the cases apart.
    static func exitStatus(_ error: ReplicationError) -> Int32 {
        switch error {
        case .unauthorized, .forbidden: 77  // EX_NOPERM
        case .connectionRefused, .connectionReset, .timeout, .unreachable: 69  // EX_UNAVAILABLE
        case .insufficientStorage: 74  // EX_IOERR
        case .databaseNotFound: 66  // EX_NOINPUT
        case .badRequest: 64  // EX_USAGE
        default: 1
        }
    }

    /// SIGINT/SIGTERM cancel the replication (a continuous one ends this way).
    static func cancelOnInterrupt(_ replication: Replication) -> [any DispatchSourceSignal] {
        let queue = DispatchQueue(label: "couchlite.replicate.signals")
        return [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { replication.cancel() }
            source.resume()
            return source
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data("couchlite: \(text)\n".utf8))
    }
}
