import CouchWire

/// The order CouchDB's Mango compares `_id` in (`mango_json:cmp_raw/2`): Erlang's term order over the decoded JSON,
/// the order `_all_docs` keeps its ids in. Numbers first (by value, `1` equals `1.0`), then the atoms
/// `false < null < true`, then objects (`{Props}` tuples), then arrays (lists), then strings (binaries, by bytes).
/// Objects compare member by member, key by bytes and then value; arrays element by element; the shorter first.
/// So `{"_id": {"$gt": {}}}` matches every string id, and `{"_id": {"$lt": {}}}` none, as on CouchDB.
enum RawCollation {
    /// -1, 0 or 1 as `lhs` sorts before, with, or after `rhs`.
    static func compare(_ lhs: JSON, _ rhs: JSON) -> Int {
        let (leftRank, rightRank) = (rank(lhs), rank(rhs))
        if leftRank != rightRank { return leftRank < rightRank ? -1 : 1 }
        switch (lhs, rhs) {
        case (.number(let left), .number(let right)):
            return compareNumbers(left, right)
        case (.string(let left), .string(let right)):
            return compareBytes(left, right)
        case (.array(let left), .array(let right)):
            for (l, r) in zip(left, right) {
                let order = compare(l, r)
                if order != 0 { return order }
            }
            return left.count == right.count ? 0 : left.count < right.count ? -1 : 1
        case (.object(let left), .object(let right)):
            for (l, r) in zip(left, right) {
                let keyOrder = compareBytes(l.key, r.key)
                if keyOrder != 0 { return keyOrder }
                let valueOrder = compare(l.value, r.value)
                if valueOrder != 0 { return valueOrder }
            }
            return left.count == right.count ? 0 : left.count < right.count ? -1 : 1
        default:
            return 0  // null/null, and booleans, already separated by rank
        }
    }

    /// Byte-wise string order (Erlang compares binaries byte by byte).
    static func compareBytes(_ lhs: String, _ rhs: String) -> Int {
        if lhs.utf8Equals(rhs) { return 0 }
        return lhs.utf8.lexicographicallyPrecedes(rhs.utf8) ? -1 : 1
    }

    /// Erlang's order of the types a decoded JSON value has: number < atom < tuple < list < binary, and the atoms
    /// alphabetically.
    private static func rank(_ value: JSON) -> Int {
        switch value {
        case .number: return 0
        case .bool(false): return 1
        case .null: return 2
        case .bool(true): return 3
        case .object: return 4
        case .array: return 5
        case .string: return 6
        }
    }

    private static func compareNumbers(_ lhs: JSONNumber, _ rhs: JSONNumber) -> Int {
        if let left = lhs.intValue, let right = rhs.intValue {
            return left == right ? 0 : left < right ? -1 : 1
        }
        // Text is valid JSON, so Double(_:) succeeds; overflow gives ±infinity, which still orders.
        let left = Double(lhs.text) ?? 0
        let right = Double(rhs.text) ?? 0
        return left == right ? 0 : left < right ? -1 : 1
    }
}
