import CouchServer
import CouchWire
import Discovery
import Foundation
import PhotoDrop

extension Commands {
    /// `serve --announce`: the whole server as `_couchdb._tcp` on the interfaces it listens on (every one for
    /// `--bind 0.0.0.0`), named by the host name, with TXT `v`, `name`, `path=/` and, with TLS, `tls` and `sha256`.
    /// The admin's credentials are never announced. Loopback, or no shareable port 5353, only costs the
    /// announcement (a warning).
    /// - Returns: what stops it and sends the goodbyes (nothing to do when nothing was announced).
    static func announce(_ process: ServerProcess, options: Options, log: Logger) -> @Sendable () -> Void {
        guard options.announce else { return {} }
        let bind = options.bind
        guard !bind.hasPrefix("127.") && bind != "::1" && bind != "localhost" && !bind.contains(":") else {
            log.warning("not announced on the LAN", ["reason": "--bind \(bind) is not an IPv4 LAN address"])
            return {}
        }
        let host = ReceiveSession.machineName()
        let txt = ServiceDescription.txt(
            name: host, path: "/", tlsPort: process.tlsPort, fingerprint: process.tlsCertificate?.fingerprint.hex)
        let port = UInt16(clamping: process.tlsPort ?? process.port ?? 0)
        do {
            let responder = try Responder(
                name: host, hostName: host,
                services: [ServiceDescription(type: ServiceDescription.couchDBType, port: port, txt: txt)],
                addresses: bind == "0.0.0.0" ? nil : [bind],
                onRename: { log.info("announced on the LAN under another name", ["name": $0]) })
            log.info("announced on the LAN", ["name": host, "type": ServiceDescription.couchDBType])
            return { responder.stop() }
        } catch {
            log.warning("not announced on the LAN", ["error": error.description])
            return {}
        }
    }
}
