/// Which announced drop `couchlite push DIR --to NAME` sends to: the one whose instance name is exactly NAME, by
/// bytes (no case folding, no Unicode normalization: `anna` is not `Anna`, so a look-alike name never stands in for
/// the one typed), resolved, and announcing a TLS certificate to pin.
public enum DropLookup: Sendable, Equatable {
    /// One drop, its database URL (without credentials) and the certificate fingerprint its announcement pins.
    case found(Peer, url: String, fingerprint: String)
    /// No drop of that name was heard; `heard` are the names that were (sorted).
    case none(heard: [String])
    /// More than one announcement answers to the name (an impostor, or a drop heard at two places).
    case several([Peer])
    /// Heard, but not resolved to an address and port in time.
    case unresolved
    /// Its announcement names no TLS port and fingerprint: nothing to pin, and the code would travel in clear.
    case noCertificate(Peer)

    /// - Parameter isFingerprint: whether the TXT `sha256` value parses as a SHA-256 fingerprint.
    public static func choose(name: String, among peers: [Peer], isFingerprint: (String) -> Bool) -> DropLookup {
        let wanted = Array(name.utf8)
        let live = peers.filter { !$0.removed }
        let matches = live.filter { Array($0.name.utf8) == wanted }
        guard let match = matches.first else {
            return .none(
                heard: Array(Set(live.map(\.name))).sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) })
        }
        guard matches.count == 1, !match.conflicting, match.addresses.count <= 1 else { return .several(matches) }
        guard let url = match.url else { return .unresolved }
        guard url.hasPrefix("https://"), let fingerprint = match.txt["sha256"], isFingerprint(fingerprint) else {
            return .noCertificate(match)
        }
        return .found(match, url: url, fingerprint: fingerprint)
    }
}
