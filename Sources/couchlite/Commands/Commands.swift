import CouchServer
import CouchWire
import Foundation
import PhotoDrop

/// The subcommands of the `couchlite` executable. Each returns the process exit status; the
/// executable is a thin dispatcher over these.
public enum Commands {
    /// Every subcommand, one line each: `couchlite help`, `couchlite --help` (the server's, above its options) and
    /// the answer to an unknown command print it.
    public static let overview = """
        usage: couchlite [serve] [options]               run the CouchDB-compatible server
               couchlite receive [options]               receive photos into a folder (one-time credentials, QR code)
               couchlite push DIR URL [options]          send a folder of photos and videos to a peer
               couchlite push DIR --to NAME [--code C]   ... to the drop announced on the LAN as NAME
               couchlite replicate SOURCE TARGET [...]   replicate once or continuously
               couchlite peers [options]                 list the drops and servers announced on the LAN
               couchlite SUBCOMMAND --help               the options of each

        A CouchDB-compatible replication server.
        """

    /// `couchlite serve [options]`: the CouchDB-compatible server, until SIGINT/SIGTERM.
    public static func serve(arguments: [String], environment: [String: String]) -> Int32 {
        let options: Options
        let entry = Options.commandLine.enter(
            arguments, environment: environment, into: Options(),
            check: { options throws(OptionsError) in try options.validate() })
        switch entry {
        case .run(let parsed): options = parsed
        case .exit(let status): return status
        }
        let log = Logger(label: "couchlite", level: options.logLevel, format: options.logFormat)
        ServerProcess.prepareProcess()
        let process: ServerProcess
        do {
            process = try ServerProcess(options: options, log: log, product: GalleryRoutes.make)
        } catch let held as DataDirLock.Held {
            log.error("could not start", ["error": held.description])
            return dataDirInUse
        } catch {
            log.error("could not start", ["error": String(describing: error)])
            return 1
        }
        process.stopOnSignal(log: log)
        log.info(
            "listening",
            [
                "address": options.bind, "port": process.port.map(String.init) ?? "off",
                "tls_port": process.tlsPort.map(String.init) ?? "off", "data_dir": options.dataDir,
            ])
        if let certificate = process.tlsCertificate {
            log.info("tls", ["fingerprint_sha256": certificate.fingerprint.colonHex])
        }
        // Machine-readable lines for scripts that start us on port 0.
        if let url = process.baseURL { printOut("couchlite listening on \(url)\n") }
        if let url = process.tlsBaseURL, let certificate = process.tlsCertificate {
            printOut("couchlite listening on \(url)\n")
            printOut(tlsLines(process, certificate))
        }
        if let generated = process.generatedAdmin {
            // Shown once: only the hash is kept (in <data-dir>/admins.json).
            printOut(
                """
                couchlite: no server admin was configured, so one was created:
                  name: \(generated.name)   password: \(generated.password)
                This password is shown only once; only its hash is stored. Try:
                  curl -u '\(generated.name):\(generated.password)' \(process.preferredBaseURL)_session
                Set COUCHLITE_ADMIN=USER:PASS (or --admin) to choose your own.

                """)
        }
        let stopAnnouncing = announce(process, options: options, log: log)
        process.runUntilStopped()
        stopAnnouncing()
        log.info("stopped")
        return 0
    }

    /// The certificate's fingerprint (what clients pin), and where a generated one is kept.
    static func tlsLines(_ process: ServerProcess, _ certificate: TLSCertificate) -> String {
        var text = "couchlite TLS certificate SHA-256 fingerprint: \(certificate.fingerprint.colonHex)\n"
        if let generated = process.tlsGenerated {
            let path = process.app.options.dataDir + "/" + TLSIdentity.certificateName
            let why = generated.replacedBecause.map { " (the previous one was replaced: \($0))" } ?? ""
            text += "couchlite: generated a self-signed TLS certificate in \(path)\(why)\n"
        }
        return text
    }

    /// The exit status of a command refused because another process uses its data dir: EX_TEMPFAIL, as it may
    /// work once that one has stopped.
    public static let dataDirInUse: Int32 = 75

    /// A command-line mistake, as every subcommand reports it (then exit 64, EX_USAGE).
    public static func printUsageError(_ message: String, usage: String) {
        FileHandle.standardError.write(Data("couchlite: \(message)\n\n\(usage)\n".utf8))
    }

    static func printOut(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
