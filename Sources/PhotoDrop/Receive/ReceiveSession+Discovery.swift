import CouchServer
import CouchWire
import Discovery
import Foundation

extension ReceiveSession {
    /// Announces the drop on the LAN (DNS-SD over mDNS, our own `Responder`): `_photodrop._tcp` for senders and
    /// `_couchdb._tcp` for replication, on the interfaces the drop listens on, with the TXT pairs a peer needs
    /// (database path, TLS port and fingerprint, display name, protocol version) and never the credentials, which
    /// only the receiving screen shows. A machine with no LAN interface, or a port 5353 that cannot be shared, only
    /// costs the announcement: the URL and the QR code still work.
    /// - Returns: what stops the announcement (and sends the goodbyes); it does nothing when nothing was announced.
    func startAnnouncing(_ process: ServerProcess, others: [String]) -> @Sendable () -> Void {
        guard options.announce else { return {} }
        let bind = process.app.options.bind
        let addresses: [String]? =
            bind == "0.0.0.0" ? nil : ([bind] + others).filter { !$0.contains(":") && !$0.hasPrefix("127.") }
        guard addresses.map({ !$0.isEmpty }) ?? true else {
            log.info("not announced on the LAN", ["reason": "it listens on loopback only"])
            return {}
        }
        let host = ReceiveSession.machineName()
        let name = options.name ?? host
        let path = "/" + PercentEncoding.segment(options.database)
        let port = process.tlsPort ?? process.port ?? 0
        let txt = ServiceDescription.txt(
            name: name, path: path, tlsPort: process.tlsPort, fingerprint: process.tlsCertificate?.fingerprint.hex)
        let services = [ServiceDescription.photoDropType, ServiceDescription.couchDBType].map {
            ServiceDescription(type: $0, port: UInt16(clamping: port), txt: txt)
        }
        let handle = options.json ? FileHandle.standardError : FileHandle.standardOutput
        do {
            let responder = try Responder(
                name: name, hostName: host, services: services, addresses: addresses,
                onRename: { renamed in
                    handle.write(
                        Data("couchlite receive: that name is taken on the LAN; announced as \"\(renamed)\"\n".utf8))
                })
            handle.write(
                Data("couchlite receive: announced on the LAN as \"\(name)\" (couchlite peers lists it)\n".utf8))
            return { responder.stop() }
        } catch {
            log.warning("not announced on the LAN", ["error": error.description])
            return {}
        }
    }

    /// The machine's host name (`gethostname`), the display name when `--name` is not given.
    package static func machineName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "couchlite" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "couchlite" : name
    }
}
