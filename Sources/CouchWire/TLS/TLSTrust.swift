/// How a TLS client decides to trust the server it reached.
public enum TLSTrust: Sendable, Equatable {
    /// The chain must lead to a trusted CA and the certificate must name the host (DNS name or IP address)
    /// and be within its validity. Trusted CAs: the system store (`systemStore`) and those in `caFile` (PEM).
    /// `.verified(caFile: nil, systemStore: true)` is the default of `https://` URLs;
    /// `.verified(caFile: path, systemStore: false)` trusts only `path`, as `curl --cacert` does.
    case verified(caFile: String?, systemStore: Bool)
    /// The server's certificate must have this SHA-256 fingerprint and be within its validity; chain and
    /// host name are not checked (a self-signed peer known through a QR code or a `#sha256=` fragment).
    case pinned(TLSFingerprint)
    /// Nothing is checked: encryption without authentication. Callers warn when they use it.
    case insecure

    /// The system trust store only.
    public static let system = TLSTrust.verified(caFile: nil, systemStore: true)
}
