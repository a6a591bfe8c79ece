import CouchServer
import PhotoDrop

/// `couchlite receive`: receive photos into a folder (one-time credentials, QR code).
func receive(_ arguments: [String], _ environment: [String: String]) -> Int32 {
    Commands.receive(arguments: arguments, environment: environment)
}
