/// A message's properties: ordered `name`/`value` pairs of UTF-8 text, sent as `name\0value\0…` after a varint of
/// their length. BLIP 3 has no token table (it was removed before 3.0, LiteCore `BLIP Protocol.md`).
public struct BlipProperties: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)
    private var pairs: [Element]

    public init() { pairs = [] }
    public init(_ pairs: [(String, String)]) { self.pairs = pairs.map { (name: $0.0, value: $0.1) } }
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    public var count: Int { pairs.count }
    public var isEmpty: Bool { pairs.isEmpty }
    public func makeIterator() -> IndexingIterator<[Element]> { pairs.makeIterator() }

    /// The first value named `name`, compared byte for byte (`Profile` and `profile` differ, as in LiteCore).
    public subscript(name: String) -> String? {
        let key = Array(name.utf8)
        return pairs.first { Array($0.name.utf8) == key }?.value
    }

    public mutating func add(_ name: String, _ value: String) { pairs.append((name: name, value: value)) }

    public static func == (lhs: BlipProperties, rhs: BlipProperties) -> Bool {
        lhs.pairs.count == rhs.pairs.count
            && zip(lhs.pairs, rhs.pairs).allSatisfy {
                Array($0.name.utf8) == Array($1.name.utf8) && Array($0.value.utf8) == Array($1.value.utf8)
            }
    }

    /// The encoded block (without its length).
    /// - Throws: `.invalidMessage` when a name or value holds a NUL, or the block passes 100 KiB.
    public func encoded() throws(BlipError) -> [UInt8] {
        var out: [UInt8] = []
        for (name, value) in pairs {
            guard !name.utf8.contains(0), !value.utf8.contains(0) else {
                throw .invalidMessage("A property holds a NUL byte.")
            }
            out += name.utf8
            out.append(0)
            out += value.utf8
            out.append(0)
        }
        guard out.count <= BlipLimits.maxPropertiesBytes else {
            throw .invalidMessage("Properties longer than \(BlipLimits.maxPropertiesBytes) bytes.")
        }
        return out
    }

    /// Decodes a block: empty, or NUL-terminated strings in pairs, each UTF-8.
    /// - Throws: `.protocolViolation` otherwise.
    public static func decode(_ bytes: some BidirectionalCollection<UInt8>) throws(BlipError) -> BlipProperties {
        guard !bytes.isEmpty else { return BlipProperties() }
        guard bytes.last == 0 else { throw .protocolViolation("Message properties are not NUL-terminated.") }
        let strings = bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast()
        guard strings.count % 2 == 0 else { throw .protocolViolation("A message property has no value.") }
        var result = BlipProperties()
        var iterator = strings.makeIterator()
        while let name = iterator.next(), let value = iterator.next() {
            guard let nameText = String(validating: name, as: UTF8.self),
                let valueText = String(validating: value, as: UTF8.self)
            else { throw .protocolViolation("A message property is not UTF-8.") }
            result.add(nameText, valueText)
        }
        return result
    }
}
