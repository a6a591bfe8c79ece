/// One service this process announces: an instance of a DNS-SD service type on one port with its TXT pairs.
public struct ServiceDescription: Sendable, Equatable {
    /// `_photodrop._tcp`: a drop that receives photos (`couchlite receive`).
    public static let photoDropType = "_photodrop._tcp"
    /// `_couchdb._tcp`: a CouchDB replication endpoint (the drop's database, or a whole `serve`).
    public static let couchDBType = "_couchdb._tcp"
    /// The TXT protocol version peers check (`v=1`).
    public static let protocolVersion = "1"

    /// The service type without `.local` (`_photodrop._tcp`).
    public var type: String
    public var port: UInt16
    /// Key/value pairs in order (RFC 6763 §6.3: keys are short ASCII; values are bytes, here UTF-8 text).
    public var txt: [(key: String, value: String)]

    public init(type: String, port: UInt16, txt: [(key: String, value: String)]) {
        self.type = type
        self.port = port
        self.txt = txt
    }

    public static func == (lhs: ServiceDescription, rhs: ServiceDescription) -> Bool {
        lhs.type == rhs.type && lhs.port == rhs.port && lhs.txt.elementsEqual(rhs.txt) { $0 == $1 }
    }

    /// The TXT record's strings: `key=value`, each cut to 255 bytes (a character-string's limit).
    var txtStrings: [[UInt8]] { txt.map { Array(Array("\($0.key)=\($0.value)".utf8).prefix(255)) } }

    /// The TXT pairs a drop or server announces (never credentials: those are shown on the receiving screen only).
    /// - Parameters:
    ///   - path: the database path (`/photodrop`), or `/` for a whole server.
    ///   - tlsPort: the HTTPS port, with the certificate's SHA-256 fingerprint in hex (pinned by the finder).
    public static func txt(name: String, path: String, tlsPort: Int?, fingerprint: String?)
        -> [(key: String, value: String)]
    {
        var pairs: [(key: String, value: String)] = [
            ("v", protocolVersion), ("name", utf8Prefix(name, 200)), ("path", path),
        ]
        if let tlsPort { pairs.append(("tls", String(tlsPort))) }
        if let fingerprint { pairs.append(("sha256", fingerprint)) }
        return pairs
    }
}

/// An IPv4 interface the responder serves: its address and netmask, so that queries from outside its subnet go
/// unanswered (RFC 6762 §11: a responder answers only queries from the local link).
public struct MDNSInterface: Sendable, Equatable {
    public var name: String
    public var index: UInt32
    public var address: [UInt8]
    public var netmask: [UInt8]

    public init(name: String, index: UInt32, address: [UInt8], netmask: [UInt8]) {
        self.name = name
        self.index = index
        self.address = address
        self.netmask = netmask
    }

    /// Whether `source` is on this interface's subnet.
    public func contains(_ source: [UInt8]) -> Bool {
        guard source.count == 4, address.count == 4, netmask.count == 4 else { return false }
        return (0..<4).allSatisfy { source[$0] & netmask[$0] == address[$0] & netmask[$0] }
    }

    public var dotted: String { address.map(String.init).joined(separator: ".") }
}

/// An instance name under conflict renaming: `Anna's laptop`, then `Anna's laptop (2)`, `(3)`… (RFC 6763 §9 leaves
/// the form to the implementation; this is the one the issue and Apple's responder use).
public func renamedInstance(_ base: String, attempt: Int) -> String {
    let suffix = attempt <= 1 ? "" : " (\(attempt))"
    // The label must stay within 63 bytes with its suffix: the base is cut on a character boundary.
    let cut = utf8Prefix(base, DNSName.maxLabelBytes - suffix.utf8.count)
    return (cut.isEmpty ? "couchlite" : cut) + suffix
}

/// The longest prefix of `text`, in whole characters, of at most `bytes` UTF-8 bytes.
func utf8Prefix(_ text: String, _ bytes: Int) -> String {
    var cut = ""
    var count = 0
    for character in text {
        count += character.utf8.count
        guard count <= bytes else { break }
        cut.append(character)
    }
    return cut
}

/// A host label from a host name: letters, digits and hyphens only (RFC 1123), lower case, with `-couchlite`
/// so it never claims the name the machine's own responder (Avahi) announces; `-2`, `-3`… after a conflict.
public func hostLabel(_ hostName: String, attempt: Int) -> String {
    let first = hostName.split(separator: ".").first.map(String.init) ?? ""
    var label = String(
        first.lowercased().unicodeScalars.map {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) ? Character($0) : "-"
        }
    )
    label = String(label.prefix(40))
    if label.isEmpty { label = "host" }
    return label + "-couchlite" + (attempt <= 1 ? "" : "-\(attempt)")
}
