import CouchServer
import Foundation
import MediaSandbox
import PhotoDrop
import QueryServer

// couchlite: a thin command line over the CouchServer library. A bare `couchlite [options]` is
// `couchlite serve [options]`, as the server was run before it had subcommands.

let arguments = Array(CommandLine.arguments.dropFirst())
let environment = ProcessInfo.processInfo.environment
// SIGINT and SIGTERM go to one thread that waits for them, so they are blocked before any other thread starts
// (StopSignals). A query-server worker is stopped by its server, never by a signal of its own.
// Every command but the workers (which lock themselves in before their first request) is made impossible to
// attach to for other processes of its user, its own workers first.
if !["query-server", "media-worker", "sandbox-probe"].contains(arguments.first) {
    StopSignals.start()
    ProcessProtection.refuseAttaching()
}
let status: Int32
switch arguments.first {
case "serve": status = serve(Array(arguments.dropFirst()), environment)
case "replicate": status = replicate(Array(arguments.dropFirst()), environment)
case "push": status = push(Array(arguments.dropFirst()), environment)
case "receive": status = receive(Array(arguments.dropFirst()), environment)
case "peers": status = peers(Array(arguments.dropFirst()), environment)
case "help": status = help()
// Hidden: the JavaScript worker the server starts for design functions (QueryServer).
case "query-server": status = QueryWorker.run(Array(arguments.dropFirst()))
// Hidden: the sandboxed decoder of photos and videos the server starts (MediaSandbox).
case "media-worker": status = MediaWorker.run(Array(arguments.dropFirst()))
// Hidden, for tests: a worker in the same sandbox that tries escapes on request (SandboxProbe).
case "sandbox-probe": status = SandboxProbe.run(Array(arguments.dropFirst()))
case let word? where !word.hasPrefix("-"):
    // Not an option, so not `serve`'s: a mistyped command ("recieve") should not start a server.
    FileHandle.standardError.write(Data("couchlite: unknown command '\(word)'\n\n\(Commands.overview)\n".utf8))
    status = 64
default: status = serve(arguments, environment)
}
exit(status)
