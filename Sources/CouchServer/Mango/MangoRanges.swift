import CouchQuery
import CouchWire

/// The key range a normalized selector allows for one field (`mango_idx_view:range/2`): comparisons under
/// `$and` narrow it; anything else is left to the post-filter.
enum MangoBound: Sendable, Equatable {
    case min, max
    case value(JSON)

    /// -1, 0, 1 in view collation, `min` below every value and `max` above.
    static func compare(_ lhs: MangoBound, _ rhs: MangoBound) -> Int {
        switch (lhs, rhs) {
        case (.min, .min), (.max, .max): 0
        case (.min, _), (_, .max): -1
        case (_, .min), (.max, _): 1
        case (.value(let left), .value(let right)): ViewCollation.compare(left, right)
        }
    }
}

struct MangoRange: Sendable, Equatable {
    var lowOp = "$gt"
    var low = MangoBound.min
    var highOp = "$lt"
    var high = MangoBound.max

    static func equal(_ value: JSON) -> MangoRange {
        MangoRange(lowOp: "$eq", low: .value(value), highOp: "$eq", high: .value(value))
    }
}

enum MangoRanges {
    /// `mango_idx_view:indexable/1`.
    static let indexableOperators: Set<String> = ["$lt", "$lte", "$eq", "$gt", "$gte", "$beginsWith", "$exists"]

    /// The fields an index could locate (`indexable_fields/1`), sorted and unique.
    static func indexableFields(_ selector: JSON) -> [String] {
        var fields: Set<String> = []
        collectIndexable(selector, into: &fields)
        return fields.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    private static func collectIndexable(_ selector: JSON, into fields: inout Set<String>) {
        guard let (key, value) = SelectorNormalizer.single(selector) else { return }
        if key == "$and" {
            for item in value.arrayValue ?? [] { collectIndexable(item, into: &fields) }
        } else if !key.hasPrefix("$"), let (op, _) = SelectorNormalizer.single(value), indexableOperators.contains(op) {
            fields.insert(key)
        }
    }

    /// Every field the selector names at its top level (`mango_selector:fields/1`).
    static func fields(_ selector: JSON) -> [String] {
        guard let (key, value) = SelectorNormalizer.single(selector) else { return [] }
        if key.hasPrefix("$") {
            guard case .array(let items) = value else { return [] }
            return items.flatMap(fields)
        }
        return [key]
    }

    /// Each indexable field with its range; a field whose range is empty is the only one returned
    /// (`field_ranges/1`).
    static func fieldRanges(_ selector: JSON) -> [(field: String, range: MangoRange?)] {
        var result: [(String, MangoRange?)] = []
        for field in indexableFields(selector) {
            guard let range = narrow(selector, field: field, MangoRange()) else { return [(field, nil)] }
            result.append((field, range))
        }
        return result
    }

    /// `range/6`: nil is `empty`.
    private static func narrow(_ selector: JSON, field: String, _ range: MangoRange) -> MangoRange? {
        guard let (key, value) = SelectorNormalizer.single(selector) else { return range }
        if key == "$and" {
            var current = range
            for item in value.arrayValue ?? [] {
                guard let next = narrow(item, field: field, current) else { return nil }
                current = next
            }
            return current
        }
        guard key.utf8Equals(field), let (op, argument) = SelectorNormalizer.single(value) else { return range }
        return apply(op, argument, range)
    }

    /// Where `argument` falls against the range: min, low, mid, high, max.
    private enum Position { case min, low, mid, high, max }

    private static func position(_ range: MangoRange, _ argument: JSON) -> Position {
        let lowOrder = MangoBound.compare(.value(argument), range.low)
        if lowOrder < 0 { return .min }
        if lowOrder == 0 { return .low }
        let highOrder = MangoBound.compare(.value(argument), range.high)
        return highOrder < 0 ? .mid : highOrder == 0 ? .high : .max
    }

    private static func apply(_ op: String, _ argument: JSON, _ range: MangoRange) -> MangoRange? {
        var narrowed = range
        let lowInclusive = range.lowOp == "$gte" || range.lowOp == "$eq"
        let highInclusive = range.highOp == "$lte" || range.highOp == "$eq"
        switch (op, position(range, argument)) {
        case ("$beginsWith", _):
            guard case .string(let prefix) = argument, let low = apply("$gte", argument, range) else { return nil }
            return apply("$lte", .string(prefix + "\u{FFFF}"), low)
        case ("$lt", .min), ("$lt", .low): return nil
        case ("$lt", .mid), ("$lt", .high):
            narrowed.highOp = "$lt"
            narrowed.high = .value(argument)
        case ("$lte", .min): return nil
        case ("$lte", .low): return lowInclusive ? .equal(argument) : nil
        case ("$lte", .mid):
            narrowed.highOp = "$lte"
            narrowed.high = .value(argument)
        case ("$eq", .min), ("$eq", .max): return nil
        case ("$eq", .low): return lowInclusive ? .equal(argument) : nil
        case ("$eq", .mid): return .equal(argument)
        case ("$eq", .high): return highInclusive ? .equal(argument) : nil
        case ("$gte", .mid):
            narrowed.lowOp = "$gte"
            narrowed.low = .value(argument)
        case ("$gte", .high): return highInclusive ? .equal(argument) : nil
        case ("$gte", .max), ("$gt", .high), ("$gt", .max): return nil
        case ("$gt", .low), ("$gt", .mid):
            narrowed.lowOp = "$gt"
            narrowed.low = .value(argument)
        default: break
        }
        return narrowed
    }

    /// The view's start key for a prefix of ranges (`mango_idx_view:start_key/1`).
    static func startKey(_ ranges: [MangoRange]) -> [JSON] { values(ranges.map(\.low)) }

    /// The end key's values; the key itself ends with CouchDB's `<MAX>` after them (`end_key/1`).
    static func endKey(_ ranges: [MangoRange]) -> [JSON] { values(ranges.map(\.high)) }

    /// The leading bounds that are values, up to the first `min`/`max`.
    private static func values(_ bounds: [MangoBound]) -> [JSON] {
        var key: [JSON] = []
        for bound in bounds {
            guard case .value(let value) = bound else { break }
            key.append(value)
        }
        return key
    }

    /// Whether the selector pins `field` to one value (`is_constant_field/2`).
    static func isConstant(_ selector: JSON, _ field: String) -> Bool {
        guard let (key, value) = SelectorNormalizer.single(selector) else { return false }
        if key == "$and" { return (value.arrayValue ?? []).contains { isConstant($0, field) } }
        return key.utf8Equals(field) && SelectorNormalizer.single(value)?.key == "$eq"
    }

    /// Whether every field of `required` must exist in a matching document (`has_required_fields/2`).
    static func hasRequiredFields(_ selector: JSON, _ required: [String]) -> Bool {
        remaining(selector, Set(required)).isEmpty
    }

    private static func remaining(_ selector: JSON, _ required: Set<String>) -> Set<String> {
        if required.isEmpty { return required }
        guard let (key, value) = SelectorNormalizer.single(selector) else { return required }
        switch key {
        case "$and":
            var left = required
            for item in value.arrayValue ?? [] { left = remaining(item, left) }
            return left
        case "$or":
            var left: Set<String> = []
            for item in value.arrayValue ?? [] { left.formUnion(remaining(item, required)) }
            return left
        default:
            if key.hasPrefix("$") { return required }
            if case .bool(false)? = value["$exists"] { return required }
            return required.subtracting([key])
        }
    }
}
