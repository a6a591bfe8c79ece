import CouchWire
import Foundation
import Synchronization

/// How the replicator decides to trust an `https://` peer, as the person asked for it. By default its
/// certificate must chain to the system's trust store, be within its dates and name the host of the URL, as
/// a browser checks it. `caFile` replaces the system store by the certificates of one PEM file (curl's
/// `--cacert`); a `pin` trusts exactly one certificate, by its SHA-256 fingerprint, whoever issued it and
/// whatever names it holds (how a sender trusts a self-signed receiver from its QR code); it wins over the
/// other two. `insecure` checks nothing and is for a self-signed peer whose fingerprint is not at hand:
/// the channel is then encrypted, but anyone on the network path could be the peer.
public struct PeerTrust: Sendable, Equatable {
    public var caFile: String?
    public var pin: TLSFingerprint?
    public var insecure = false

    public init(caFile: String? = nil, pin: TLSFingerprint? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.pin = pin
        self.insecure = insecure
    }

    /// Nothing asked for: the system trust store.
    public var isDefault: Bool { caFile == nil && pin == nil && !insecure }

    /// True when nothing at all is verified (`insecure` without a pin): worth a warning to the person.
    public var verifiesNothing: Bool { insecure && pin == nil }

    /// What the TLS core checks.
    public var tlsTrust: TLSTrust {
        if let pin { return .pinned(pin) }
        if insecure { return .insecure }
        if let caFile { return .verified(caFile: caFile, systemStore: false) }
        return .system
    }

    /// The warning printed (or logged) when `verifiesNothing` for `peer`.
    public static func insecureWarning(_ peer: String) -> String {
        "warning: the certificate of \(peer) is not verified (insecure): the connection is encrypted, but anyone "
            + "on the network path could pose as the peer and read the credentials; pin its fingerprint instead"
    }

    /// A fingerprint as people copy it: 64 hex digits in any case, plain (`ab12…`, as in a `#sha256=` URL) or
    /// in colon-separated pairs (`AB:12:…`, as printed beside a receiver's QR code and by `openssl x509
    /// -fingerprint -sha256`), with the whitespace of a paste around it. Anything else is refused with a reason.
    public static func parsePin(_ text: String) throws(ReplicationError) -> TLSFingerprint {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        // The longest accepted form is `sha256:` and 95 characters; the length is checked first because
        // `TLSFingerprint(parsing:)` steps through characters by offset, quadratic in a hostile megabyte.
        if trimmed.utf8.count <= 128, let pin = TLSFingerprint(parsing: trimmed) { return pin }
        let digits = trimmed.utf8.count <= 128 ? trimmed.unicodeScalars.filter { $0 != ":" }.count : 0
        var reason = "a certificate pin is a SHA-256 fingerprint: 64 hex digits, plain or in pairs separated by colons"
        if digits == 40 { reason += " (this looks like a SHA-1 fingerprint)" }
        let shown = trimmed.utf8.count > 100 ? String(trimmed.prefix(100)) + "…" : trimmed
        let escaped = shown.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : String($0) }.joined()
        throw .badRequest("\(reason); got '\(escaped)'")
    }

    /// The client context for this trust. The system store's is made once per process (loading the store
    /// costs milliseconds); the others per endpoint, so an edited CA file is read again.
    func context() throws(ReplicationError) -> TLSContext {
        let trust = tlsTrust
        do {
            if trust == .system {
                if let shared = Self.systemContext.withLock({ $0 }) { return shared }
                let made = try TLSContext.client(trust: trust)
                Self.systemContext.withLock { $0 = made }
                return made
            }
            return try TLSContext.client(trust: trust)
        } catch {
            throw ClientSocket.replicationError(error, peer: caFile ?? "the system trust store")
        }
    }

    private static let systemContext = Mutex<TLSContext?>(nil)
}
