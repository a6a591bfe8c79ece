import CouchServer
import CouchWire
import Discovery
import Foundation

extension Commands {
    /// What `couchlite peers`'s command line sets.
    struct PeersSettings: Sendable {
        var seconds = 3.0
        var json = false
    }

    static let peersCommandLine = OptionTable<PeersSettings>(
        summary: """
            usage: couchlite peers [options]

            Lists the photo drops (couchlite receive, _photodrop._tcp) and CouchDB servers (_couchdb._tcp)
            that announce themselves on the LAN with DNS-SD over mDNS: name, URL, TLS certificate fingerprint
            and how long ago each was heard. An announcement grants nothing: the receiver's screen shows the
            credentials.
            """,
        specs: [
            Spec(flag: "--seconds", valueName: "SECONDS", help: "how long to listen, 0.5 to 60, default 3") {
                o, v throws(OptionsError) in
                guard let seconds = Double(v), seconds >= 0.5, seconds <= 60 else {
                    throw OptionsError("--seconds must be a number from 0.5 to 60, got '\(v)'")
                }
                o.seconds = seconds
            },
            .toggle("--json", help: "one JSON object per line instead of the table") { $0.json = $1 },
        ],
        footer: "exit status: 0 listened (even if nothing was found), 69 no network interface or socket, 64 bad usage.")

    typealias Spec = OptionSpec<PeersSettings>

    /// `couchlite peers`.
    public static func peers(arguments: [String], environment: [String: String]) -> Int32 {
        let settings: PeersSettings
        switch peersCommandLine.enter(arguments, environment: environment, into: PeersSettings()) {
        case .run(let parsed): settings = parsed
        case .exit(let status): return status
        }
        let start = Date()
        let found: [Peer]
        do {
            found = try Browser.browse(
                types: [ServiceDescription.photoDropType, ServiceDescription.couchDBType], seconds: settings.seconds)
        } catch {
            FileHandle.standardError.write(Data("couchlite peers: \(error.description)\n".utf8))
            return 69
        }
        let listened = Date().timeIntervalSince(start)
        let peers = found.filter { !$0.removed }
        var text = ""
        for peer in peers {
            let kind = peer.type == ServiceDescription.photoDropType ? "drop" : "server"
            // How long ago it was last heard, on the monotonic clock of `lastSeen`.
            let age = max(0, Int((Browser.now() - peer.lastSeen).rounded()))
            let fingerprint = peer.txt["sha256"].flatMap { TLSFingerprint(parsing: $0) }?.colonHex
            if settings.json {
                var fields: [(String, JSON)] = [
                    ("name", .string(peer.name)), ("kind", .string(kind)), ("type", .string(peer.type)),
                    ("url", peer.url.map { .string($0) } ?? .null), ("age_seconds", .number(JSONNumber(age))),
                    ("version", peer.txt["v"].map { .string($0) } ?? .null),
                ]
                fields.append(("fingerprint_sha256", fingerprint.map { .string($0) } ?? .null))
                text += String(decoding: JSON.object(JSONObject(fields)).serialized(), as: UTF8.self) + "\n"
            } else {
                text += "\(kind)\t\(peer.name)\t\(peer.url ?? "(unresolved)")\t"
                text += "\(fingerprint.map { "sha256 " + $0 } ?? "no TLS")\t\(age) s ago\n"
            }
        }
        if !settings.json && peers.isEmpty {
            text = "couchlite peers: nothing found in \(String(format: "%.1f", listened)) s\n"
        }
        printOut(text)
        return 0
    }

}
