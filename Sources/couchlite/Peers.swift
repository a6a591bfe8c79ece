import CouchServer

/// `couchlite peers [options]`: lists the drops and servers announced on the LAN.
func peers(_ arguments: [String], _ environment: [String: String]) -> Int32 {
    Commands.peers(arguments: arguments, environment: environment)
}
