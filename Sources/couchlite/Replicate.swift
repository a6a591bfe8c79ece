import CouchServer
import PhotoDrop

/// `couchlite replicate SOURCE TARGET [options]`: one replication, then exit.
func replicate(_ arguments: [String], _ environment: [String: String]) -> Int32 {
    Commands.replicate(arguments: arguments, environment: environment)
}
