import CouchServer
import Foundation
import PhotoDrop
import Replicator

/// `--pin`, `--cacert` and `--insecure`, shared by `couchlite replicate` and `couchlite push`: how the
/// certificate of an `https://` peer is checked (see `PeerTrust`). They apply to every `https://` URL of the
/// command; a URL's own `#sha256=` fragment pins that URL.
struct TLSFlags: Sendable {
    var trust = PeerTrust()

    /// The rows of `couchlite replicate` and `couchlite push` (lifted into their settings).
    static let specs: [OptionSpec<TLSFlags>] = [
        .init(
            flag: "--pin", valueName: "SHA256",
            help: "trust only the certificate with this SHA-256 fingerprint (as URL#sha256=HEX does)"
        ) { flags, text throws(OptionsError) in
            do throws(ReplicationError) {
                flags.trust.pin = try PeerTrust.parsePin(text)
            } catch {
                throw OptionsError("--pin: \(error.description)")
            }
        },
        .init(
            flag: "--cacert", valueName: "FILE",
            help: "trust the certificate authorities in FILE (PEM) instead of the system's"
        ) { flags, path throws(OptionsError) in
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw OptionsError("--cacert: cannot read \(path)")
            }
            flags.trust.caFile = path
        },
        .toggle("--insecure", help: "do not check the https:// peer's certificate (prints a warning; prefer --pin)") {
            $0.trust.insecure = $1
        },
    ]

    /// The endpoint of `url` with these flags applied when it is `https://`; warns when nothing is verified.
    func endpoint(_ url: String, warn: (String) -> Void) throws(ReplicationError) -> Endpoint {
        let secure = url.lowercased().hasPrefix("https://")
        let endpoint = try Endpoint.remote(url: url, trust: secure ? trust : PeerTrust())
        if let trust = endpoint.trust, trust.verifiesNothing {
            warn(PeerTrust.insecureWarning(endpoint.client.peerName))
        }
        return endpoint
    }

    /// Refuses flags that would apply to no URL (all plain HTTP or local): the person expected a checked peer.
    func check(urls: [String]) throws(OptionsError) {
        guard !trust.isDefault, !urls.contains(where: { $0.lowercased().hasPrefix("https://") }) else { return }
        throw OptionsError("--pin, --cacert and --insecure need an https:// URL")
    }
}
