/// A domain name as DNS carries it: labels of bytes, compared without regard to ASCII case (RFC 1035 §2.3.3,
/// RFC 6762 §16: mDNS names are UTF-8, and only ASCII letters fold).
///
/// A value always obeys RFC 1035's limits (labels of 1-63 bytes, at most 255 bytes on the wire), so anything built
/// from one can be written without a check: the initializers that take outside text refuse what does not fit.
public struct DNSName: Sendable, CustomStringConvertible {
    /// Longest label in bytes (RFC 1035 §2.3.4).
    public static let maxLabelBytes = 63
    /// Longest name on the wire, length bytes and the root's zero included (RFC 1035 §2.3.4).
    public static let maxWireBytes = 255

    /// The labels, leftmost first, without the empty root label.
    public let labels: [[UInt8]]

    /// The root, the name with no labels.
    public static let root = DNSName(checked: [])

    private init(checked labels: [[UInt8]]) { self.labels = labels }

    /// nil when a label is empty or too long, or the name is too long.
    public init?(labels: [[UInt8]]) {
        var wire = 1
        for label in labels {
            guard !label.isEmpty, label.count <= DNSName.maxLabelBytes else { return nil }
            wire += 1 + label.count
            guard wire <= DNSName.maxWireBytes else { return nil }
        }
        self.labels = labels
    }

    /// A dotted name (`_photodrop._tcp.local`; a trailing dot is allowed). Dots split labels: an instance label
    /// holding a dot is made with `prepending(label:)` instead.
    public init?(_ dotted: String) {
        var text = Substring(dotted)
        if text.hasSuffix(".") { text = text.dropLast() }
        if text.isEmpty {
            self.init(checked: [])
            return
        }
        self.init(labels: text.split(separator: ".", omittingEmptySubsequences: false).map { Array($0.utf8) })
    }

    /// This name under one more label on the left (a service instance under its type); nil when it would not fit.
    public func prepending(label: [UInt8]) -> DNSName? {
        DNSName(labels: [label] + labels)
    }

    /// The wire length: a length byte per label, the label, and the root's zero.
    public var wireCount: Int { labels.reduce(1) { $0 + 1 + $1.count } }

    /// Labels joined by dots, the first (an instance name, which may hold dots and spaces) as it is.
    public var description: String {
        labels.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
    }

    /// The first label as text (an instance's display name).
    public var firstLabel: String { labels.first.map { String(decoding: $0, as: UTF8.self) } ?? "" }

    /// The labels with ASCII letters folded to lower case: the key names are compared and compressed by.
    public var folded: [[UInt8]] {
        labels.map { label in label.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 } }
    }

    /// Whether the name ends with `suffix` (equal names included), ignoring ASCII case.
    public func hasSuffix(_ suffix: DNSName) -> Bool {
        guard suffix.labels.count <= labels.count else { return false }
        return Array(folded.suffix(suffix.labels.count)) == suffix.folded
    }
}

extension DNSName: Hashable {
    public static func == (lhs: DNSName, rhs: DNSName) -> Bool { lhs.folded == rhs.folded }
    public func hash(into hasher: inout Hasher) { hasher.combine(folded) }
}
