/// How the replicator decides to trust an `https://` peer. By default its certificate must chain to the
/// system's trust store and name the host of the URL, as a browser checks it. `caFile` replaces the system
/// store by the certificates of one PEM file (curl's `--cacert`); a `pin` trusts exactly one certificate, by
/// its SHA-256 fingerprint, whoever issued it and whatever names it holds (how a sender trusts a self-signed
/// receiver from its QR code); `insecure` checks nothing and is for a self-signed peer whose fingerprint is
/// not at hand: the channel is then encrypted but anyone on the network path could be the peer.
public struct PeerTrust: Sendable, Equatable {
    public var caFile: String?
    public var pin: CertificatePin?
    public var insecure = false

    public init(caFile: String? = nil, pin: CertificatePin? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.pin = pin
        self.insecure = insecure
    }

    /// Nothing asked for: the system trust store.
    public var isDefault: Bool { caFile == nil && pin == nil && !insecure }

    /// True when nothing at all is verified (`insecure` without a pin): worth a warning to the person.
    public var verifiesNothing: Bool { insecure && pin == nil }

    /// The warning printed (or logged) when `verifiesNothing` for `peer`.
    public static func insecureWarning(_ peer: String) -> String {
        "warning: the certificate of \(peer) is not verified (insecure): the connection is encrypted, but anyone "
            + "on the network path could pose as the peer and read the credentials; pin its fingerprint instead"
    }
}
