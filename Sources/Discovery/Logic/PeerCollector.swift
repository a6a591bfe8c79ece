/// A drop or server heard on the LAN.
public struct Peer: Sendable, Equatable {
    /// The instance name (`Anna's laptop`).
    public var name: String
    /// `_photodrop._tcp` or `_couchdb._tcp`.
    public var type: String
    public var host: String?
    public var port: UInt16?
    public var addresses: [[UInt8]] = []
    public var txt: [String: String] = [:]
    /// Seconds (the browser's clock) when first and last heard.
    public var firstSeen: Double
    public var lastSeen: Double
    /// A goodbye (TTL 0) was heard for its PTR record.
    public var removed = false
    /// Two different SRV or TXT records were heard for this one instance name (two announcers claim it: an
    /// impostor, or a drop restarted with another port or certificate): which one is meant cannot be told.
    public var conflicting = false

    /// The URL of its database: https on the TLS port when the TXT names one, else http on the SRV port.
    public var url: String? {
        guard let address = addresses.first else { return nil }
        let host = address.map(String.init).joined(separator: ".")
        let path = txt["path"].map { $0.hasPrefix("/") ? $0 : "/" + $0 } ?? "/"
        if let tls = txt["tls"], let tlsPort = UInt16(tls) { return "https://\(host):\(tlsPort)\(path)" }
        guard let port else { return nil }
        return "http://\(host):\(port)\(path)"
    }

    /// Resolved enough to be used: an address and a port.
    public var isResolved: Bool { url != nil }
}

/// Collects what responses say about the instances of the browsed service types (pure: tests feed it messages).
///
/// Bounded: at most `maxPeers` instances are kept, each with at most `maxAddresses` addresses and `maxTXTPairs` TXT
/// pairs; what a flood adds past that is dropped.
public struct PeerCollector: Sendable {
    public static let maxPeers = 256
    static let maxAddresses = 8
    static let maxTXTPairs = 32

    public let types: [DNSName]
    public private(set) var peers: [DNSName: Peer] = [:]
    /// Host name → addresses, as A records may come before or after the SRV naming the host.
    private var hosts: [DNSName: [[UInt8]]] = [:]

    public init(types: [String]) {
        self.types = types.compactMap { DNSName($0 + ".local") }
    }

    public mutating func add(_ message: DNSMessage, now: Double) {
        guard message.isResponse else { return }
        let records = message.allRecords
        for record in records {
            guard case .ptr(let instance) = record.data, let type = types.first(where: { $0 == record.name }),
                instance.labels.count == type.labels.count + 1, instance.hasSuffix(type)
            else { continue }
            if var peer = peers[instance] {
                peer.lastSeen = now
                peer.removed = record.ttl == 0
                peers[instance] = peer
            } else if peers.count < Self.maxPeers, record.ttl > 0 {
                peers[instance] = Peer(
                    name: instance.firstLabel,
                    type: type.labels.prefix(2).map { String(decoding: $0, as: UTF8.self) }
                        .joined(separator: "."), firstSeen: now, lastSeen: now)
            }
        }
        for record in records {
            switch record.data {
            case .a(let address) where record.ttl > 0:
                guard hosts[record.name] != nil || hosts.count < Self.maxPeers else { continue }
                var list = record.cacheFlush ? [] : hosts[record.name] ?? []
                if !list.contains(address) && list.count < Self.maxAddresses { list.append(address) }
                hosts[record.name] = list
            case .srv(_, _, let port, let target):
                guard var peer = peers[record.name] else { continue }
                if record.ttl == 0 {
                    peer.removed = true
                } else {
                    if let host = peer.host, let known = peer.port,
                        known != port || DNSName(host).map({ $0 != target }) ?? true
                    {
                        peer.conflicting = true
                    }
                    peer.host = target.description
                    peer.port = port
                }
                peer.lastSeen = now
                peers[record.name] = peer
            case .txt(let strings) where record.ttl > 0:
                guard var peer = peers[record.name] else { continue }
                var pairs: [String: String] = [:]
                for string in strings.prefix(Self.maxTXTPairs) {
                    let text = String(decoding: string, as: UTF8.self)
                    let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    guard let key = parts.first, !key.isEmpty else { continue }
                    pairs[key.lowercased()] = parts.count > 1 ? String(parts[1]) : ""
                }
                if !peer.txt.isEmpty && peer.txt != pairs { peer.conflicting = true }
                peer.txt = pairs
                peers[record.name] = peer
            default: continue
            }
        }
        for (instance, var peer) in peers {
            guard let host = peer.host, let name = DNSName(host), let addresses = hosts[name] else { continue }
            if peer.addresses != addresses {
                peer.addresses = addresses
                peers[instance] = peer
            }
        }
    }

    /// Instances still to resolve: the questions that would complete them (SRV and TXT, then the host's A).
    public func missingQuestions() -> [DNSQuestion] {
        var questions: [DNSQuestion] = []
        for (instance, peer) in peers where !peer.removed {
            if peer.port == nil || peer.txt.isEmpty {
                questions.append(DNSQuestion(name: instance, type: .srv))
                questions.append(DNSQuestion(name: instance, type: .txt))
            } else if peer.addresses.isEmpty, let host = peer.host, let name = DNSName(host) {
                questions.append(DNSQuestion(name: name, type: .a))
            }
        }
        return Array(questions.prefix(32))
    }
}
