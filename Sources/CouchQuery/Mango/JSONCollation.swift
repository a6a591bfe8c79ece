import CouchWire

/// CouchDB's view collation order for JSON values, used by Mango comparisons:
/// `null < false < true < numbers < strings < arrays < objects`.
///
/// Differences from CouchDB, on purpose: strings are compared by Unicode scalar value (which is UTF-8 byte
/// order), not with ICU's UCA collation, so `"a" < "B"` is false here (CouchDB puts lowercase first).
/// Numbers compare by value (`1` equals `1.0`); integers that fit `Int` compare exactly, others as doubles.
enum JSONCollation {
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
            // Member by member in order: key first, then value; then the shorter object first.
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

    /// Byte-wise (Unicode scalar) string order, the raw order CouchDB uses for `_id`.
    static func compareBytes(_ lhs: String, _ rhs: String) -> Int {
        if lhs.utf8Equals(rhs) { return 0 }
        return lhs.utf8.lexicographicallyPrecedes(rhs.utf8) ? -1 : 1
    }

    private static func rank(_ value: JSON) -> Int {
        switch value {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .number: return 3
        case .string: return 4
        case .array: return 5
        case .object: return 6
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
