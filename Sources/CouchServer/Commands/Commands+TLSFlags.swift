import Foundation
import Replicator

/// `--pin`, `--cacert` and `--insecure`, shared by `couchlite replicate` and `couchlite push`: how the
/// certificate of an `https://` peer is checked (see `PeerTrust`). They apply to every `https://` URL of the
/// command; a URL's own `#sha256=` fragment pins that URL.
struct TLSFlags {
    var trust = PeerTrust()

    static let usage = """
          --pin SHA256              trust only the https:// peer whose certificate has this SHA-256
                                    fingerprint (64 hex digits, colons allowed; the URL's #sha256=HEX too)
          --cacert FILE             trust the certificate authorities in FILE (PEM) instead of the system's
          --insecure                do not check the https:// peer's certificate (warns; prefer --pin)
        """

    /// Takes `argument` if it is one of the flags (reading its value with `value`).
    mutating func take(_ argument: String, value: () throws(OptionsError) -> String) throws(OptionsError) -> Bool {
        switch argument {
        case "--pin":
            let text = try value()
            do {
                trust.pin = try PeerTrust.parsePin(text)
            } catch {
                throw OptionsError("--pin: \(error.description)")
            }
        case "--cacert":
            let path = try value()
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw OptionsError("--cacert: cannot read \(path)")
            }
            trust.caFile = path
        case "--insecure", "-k": trust.insecure = true
        default: return false
        }
        return true
    }

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
