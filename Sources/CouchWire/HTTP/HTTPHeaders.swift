/// Ordered header fields; names compare case-insensitively (ASCII), values are kept as sent.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    /// Creates an empty header list.
    public init() { fields = [] }

    /// Creates a header list from `(name, value)` pairs, keeping their order.
    public init(_ pairs: [(String, String)]) { fields = pairs.map { (name: $0.0, value: $0.1) } }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Number of fields, counting repeated names separately.
    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Element]> { fields.makeIterator() }

    /// The first value of the field `name` (case-insensitive), or nil.
    public subscript(name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    /// Every value of the field `name` (case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.namesEqual($0.name, name) }.map(\.value)
    }

    /// Appends a field, keeping any existing ones of that name.
    public mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    /// Replaces every field called `name` by one with `value`, at the position of the first one.
    public mutating func set(_ name: String, _ value: String) {
        if let first = fields.firstIndex(where: { Self.namesEqual($0.name, name) }) {
            fields[first] = (name: name, value: value)
            var index = fields.count - 1
            while index > first {
                if Self.namesEqual(fields[index].name, name) { fields.remove(at: index) }
                index -= 1
            }
        } else {
            add(name, value)
        }
    }

    /// Removes every field called `name`.
    public mutating func remove(_ name: String) { fields.removeAll { Self.namesEqual($0.name, name) } }

    /// True when a field called `name` is present.
    public func contains(_ name: String) -> Bool { fields.contains { Self.namesEqual($0.name, name) } }

    /// True when any value of `name`, split at commas, has the token `token` (case-insensitive), e.g. `Connection: close`.
    public func containsToken(_ token: String, in name: String) -> Bool {
        tokens(name).contains { Self.namesEqual($0, token) }
    }

    /// Every comma-separated element of every value of `name`, trimmed, empty elements dropped.
    func tokens(_ name: String) -> [Substring] {
        values(name).flatMap { value in
            value.split(separator: ",").map { $0.trimmingSpacesAndTabs() }.filter { !$0.isEmpty }
        }
    }

    /// ASCII case-insensitive comparison without allocating.
    static func namesEqual<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        let a = a.utf8
        let b = b.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            guard lowerASCII(x) == lowerASCII(y) else { return false }
        }
        return true
    }

    private static func lowerASCII(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}
