import CouchServer
import Foundation

// couchlite: a thin command line over the CouchServer library. A bare `couchlite [options]` is
// `couchlite serve [options]`, as the server was run before it had subcommands.

let usage = """
    usage: couchlite [serve] [options]     run the CouchDB-compatible server (see couchlite serve --help)
           couchlite receive [options]     receive photos into a folder (see couchlite receive --help)

    A CouchDB-compatible replication server.
    """

let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
let status: Int32
switch arguments.first {
case "serve": status = serve(Array(arguments.dropFirst()), environment)
case "receive": status = receive(Array(arguments.dropFirst()), environment)
case "help": status = help()
default: status = serve(arguments, environment)
}
exit(status)
