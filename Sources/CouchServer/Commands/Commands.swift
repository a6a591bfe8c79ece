import Foundation

/// The subcommands of the `couchlite` executable. Each returns the process exit status; the
/// executable is a thin dispatcher over these.
public enum Commands {
    /// `couchlite serve [options]`: the CouchDB-compatible server, until SIGINT/SIGTERM.
    public static func serve(arguments: [String], environment: [String: String]) -> Int32 {
        let options: Options
        do {
            guard let parsed = try Options.parse(arguments: arguments, environment: environment) else {
                print(Options.usage)
                return 0
            }
            options = parsed
        } catch {
            printUsageError(String(describing: error), usage: Options.usage)
            return 64
        }
        let log = Logger(label: "couchlite", level: options.logLevel, format: options.logFormat)
        ServerProcess.prepareProcess()
        let process: ServerProcess
        do {
            process = try ServerProcess(options: options, log: log)
        } catch {
            log.error("could not start", ["error": String(describing: error)])
            return 1
        }
        log.info("listening", ["address": options.bind, "port": String(process.port), "data_dir": options.dataDir])
        // A machine-readable line for scripts that start us on port 0.
        printOut("couchlite listening on \(process.baseURL)\n")
        if let generated = process.generatedAdmin {
            // Shown once: only the hash is kept (in <data-dir>/admins.json).
            printOut(
                """
                couchlite: no server admin was configured, so one was created:
                  name: \(generated.name)   password: \(generated.password)
                This password is shown only once; only its hash is stored. Try:
                  curl -u '\(generated.name):\(generated.password)' \(process.baseURL)_session
                Set COUCHLITE_ADMIN=USER:PASS (or --admin) to choose your own.

                """)
        }
        process.runUntilSignalled(log: log)
        log.info("stopped")
        return 0
    }

    /// A command-line mistake, as every subcommand reports it (then exit 64, EX_USAGE).
    public static func printUsageError(_ message: String, usage: String) {
        FileHandle.standardError.write(Data("couchlite: \(message)\n\n\(usage)\n".utf8))
    }

    static func printOut(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
