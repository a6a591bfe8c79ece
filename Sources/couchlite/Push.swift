import CouchServer
import PhotoDrop

/// `couchlite push DIR URL [options]`: sends a folder of photos and videos to a peer.
func push(_ arguments: [String], _ environment: [String: String]) -> Int32 {
    Commands.push(arguments: arguments, environment: environment)
}
