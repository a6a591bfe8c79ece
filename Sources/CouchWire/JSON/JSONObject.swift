/// The members of a JSON object in the order they were sent or inserted; keys are unique.
///
/// Small objects (the usual document) are searched linearly; larger ones also keep a key → position
/// index so that lookups, and parsing an object with 100,000 members, stay linear overall.
/// Keys are told apart by their UTF-8 bytes, as in JavaScript, not by Swift's canonical equivalence.
/// Equality compares members in order: `{"a":1,"b":2}` differs from `{"b":2,"a":1}`.
public struct JSONObject: Sendable, Equatable, RandomAccessCollection {
    public typealias Element = (key: String, value: JSON)
    public typealias Index = Int

    /// Objects with more members than this also keep ``index``.
    static let indexThreshold = 16

    private var members: [Element]
    /// Position of every key, present only while `members.count > indexThreshold`.
    private var index: [UTF8Key: Int]?

    private init(members: [Element], index: [UTF8Key: Int]?) {
        self.members = members
        self.index = index
    }

    /// An empty object.
    public init() {
        members = []
        index = nil
    }

    /// An object from pairs in order; a repeated key keeps its first position and takes the last value,
    /// which is what JavaScript's `JSON.parse` gives PouchDB.
    public init(_ pairs: [(String, JSON)]) {
        self.init()
        members.reserveCapacity(pairs.count)
        for (key, value) in pairs { self[key] = value }
    }

    /// An object from parsed members in order. A repeated key takes its *last* position and value, as CouchDB's
    /// jiffy (`dedupe_keys`) decodes `{"a":1,"b":2,"a":3}` to `{"b":2,"a":3}`: the stored body and its rev hash
    /// depend on it.
    ///
    /// The common case, no repeated key, keeps `members` as they are.
    init(parsedMembers: [Element]) {
        if let positions = JSONObject.uniquePositions(parsedMembers) {
            self.init(members: parsedMembers, index: positions)
        } else {
            var seen = Set<UTF8Key>()
            let lastOccurrences = parsedMembers.reversed().filter { seen.insert(UTF8Key(string: $0.key)).inserted }
            self.init(lastOccurrences.reversed().map { ($0.key, $0.value) })
        }
    }

    /// Checks that all keys differ. Returns nil when some key repeats; otherwise the index to keep
    /// (`.some(nil)` for small objects, which need none).
    private static func uniquePositions(_ members: [Element]) -> [UTF8Key: Int]?? {
        if members.count > JSONObject.indexThreshold {
            var positions = [UTF8Key: Int](minimumCapacity: members.count)
            for (position, member) in members.enumerated() {
                guard positions.updateValue(position, forKey: UTF8Key(string: member.key)) == nil else { return nil }
            }
            return .some(positions)
        }
        // A 128-bit filter on (length, first byte) means a key is compared with the earlier ones only when
        // something similar was seen, so the usual all-distinct object costs O(n).
        var filter: (low: UInt64, high: UInt64) = (0, 0)
        for (position, member) in members.enumerated() {
            let utf8 = member.key.utf8
            let bin = (utf8.count &* 13 &+ Int(utf8.first ?? 0)) & 127
            let bit: UInt64 = 1 << UInt64(bin & 63)
            let seen = bin < 64 ? filter.low & bit : filter.high & bit
            if seen != 0 {
                for earlier in 0..<position where members[earlier].key.utf8Equals(member.key) { return nil }
            }
            if bin < 64 { filter.low |= bit } else { filter.high |= bit }
        }
        return .some(nil)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { members.count }
    public subscript(position: Int) -> Element { members[position] }

    /// The keys in order.
    public var keys: [String] { members.map(\.key) }

    /// The value for `key`. Setting nil removes the member; setting an existing key replaces its value in
    /// place; setting a new key appends it.
    public subscript(key: String) -> JSON? {
        get {
            guard let position = position(of: key) else { return nil }
            return members[position].value
        }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            if let position = position(of: key) {
                members[position].value = newValue
            } else {
                members.append((key, newValue))
                if index != nil {
                    index?[UTF8Key(string: key)] = members.count - 1
                } else if members.count > JSONObject.indexThreshold {
                    rebuildIndex()
                }
            }
        }
    }

    /// Removes the member named `key`.
    ///
    /// - Returns: its value, or nil when there was none.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSON? {
        guard let position = position(of: key) else { return nil }
        let removed = members.remove(at: position)
        rebuildIndex()
        return removed.value
    }

    /// Whether a member named `key` exists.
    public func contains(key: String) -> Bool { position(of: key) != nil }

    private func position(of key: String) -> Int? {
        if let index { return index[UTF8Key(string: key)] }
        return members.firstIndex { $0.key.utf8Equals(key) }
    }

    private mutating func rebuildIndex() {
        guard members.count > JSONObject.indexThreshold else {
            index = nil
            return
        }
        var positions = [UTF8Key: Int](minimumCapacity: members.count)
        for (position, member) in members.enumerated() { positions[UTF8Key(string: member.key)] = position }
        index = positions
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        JSON.object(lhs) == JSON.object(rhs)
    }
}
