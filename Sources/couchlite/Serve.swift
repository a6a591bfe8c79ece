import CouchServer
import PhotoDrop

/// `couchlite serve`: the server until SIGINT/SIGTERM.
func serve(_ arguments: [String], _ environment: [String: String]) -> Int32 {
    Commands.serve(arguments: arguments, environment: environment)
}

/// `couchlite help`: the subcommands.
func help() -> Int32 {
    print(Commands.overview)
    return 0
}
