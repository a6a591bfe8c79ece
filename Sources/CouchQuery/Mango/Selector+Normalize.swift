import CouchWire

/// CouchDB's three normalization passes (`mango_selector:normalize/1`), on JSON so the result is what `_explain`
/// shows: `norm_ops` validates operators and makes implicit ones explicit (`{"a":1}` is `{"a":{"$eq":1}}`, two
/// members are an `$and`), `norm_fields` pushes field names down to the terminal operators as dotted paths
/// (`{"a":{"b":{"$gt":1}}}` is `{"a.b":{"$gt":1}}`), `norm_negations` moves `$not` and `$nor` down to the
/// fields by De Morgan's laws, keeping `$not` only above operators that have no negation (`$regex`, `$size`, …).
///
/// Each pass recurses once per level of the selector; ``Selector/init(_:)`` refuses selectors deeper than
/// ``Selector/maxDepth`` before any of them runs.
public enum SelectorNormalizer {
    public static func normalize(_ selector: JSON) throws(SelectorError) -> JSON {
        if case .object(let object) = selector, object.isEmpty { return selector }
        let normalized = negations(try fields(try operators(selector), path: ""))
        if case .object(let object) = normalized, object.contains(where: { $0.key.isEmpty }) {
            throw .missingFieldName
        }
        return normalized
    }

    /// The only member of a one-member object.
    public static func single(_ json: JSON) -> (key: String, value: JSON)? {
        guard case .object(let object) = json, object.count == 1 else { return nil }
        return (object[0].key, object[0].value)
    }

    private static func member(_ key: String, _ value: JSON) -> JSON { .object(JSONObject([(key, value)])) }

    // MARK: norm_ops

    static func operators(_ json: JSON) throws(SelectorError) -> JSON {
        guard case .object(let object) = json, !object.isEmpty else { return member("$eq", json) }
        if object.count > 1 {
            var parts: [JSON] = []
            for (key, value) in object { parts.append(try operators(member(key, value))) }
            return member("$and", .array(parts))
        }
        let (key, value) = object[0]
        guard key.hasPrefix("$") else { return member(key, try operators(value)) }
        func each() throws(SelectorError) -> JSON {
            guard case .array(let items) = value else { throw .badArgument(key, value) }
            var normalized: [JSON] = []
            for item in items { normalized.append(try operators(item)) }
            return member(key, .array(normalized))
        }
        func valid(_ ok: Bool) throws(SelectorError) -> JSON {
            guard ok else { throw .badArgument(key, value) }
            return json
        }
        switch key {
        case "$and", "$or", "$nor": return try each()
        case "$not", "$elemMatch", "$allMatch", "$keyMapMatch":
            guard case .object = value else { throw .badArgument(key, value) }
            return member(key, try operators(value))
        case "$in", "$nin", "$all": return try valid(value.arrayValue != nil)
        case "$exists": return try valid(value.boolValue != nil)
        case "$type", "$beginsWith": return try valid(value.stringValue != nil)
        case "$mod":
            guard case .array(let pair) = value, pair.count == 2, pair.allSatisfy({ $0.intValue != nil }) else {
                throw .badArgument(key, value)
            }
            return json
        case "$regex": return try valid(value.stringValue.flatMap(MangoRegex.init) != nil)
        case "$size": return try valid((value.intValue ?? -1) >= 0)
        case "$text":
            switch value {
            case .string, .number, .bool: return member("$default", member("$text", value))
            default: throw .badArgument(key, value)
            }
        case "$default", "$lt", "$lte", "$eq", "$ne", "$gte", "$gt": return json
        case "$where", "$geoWithin", "$geoIntersects", "$near", "$nearSphere": throw .notSupported(key)
        default: throw .invalidOperator(key)
        }
    }

    // MARK: norm_fields

    static func fields(_ json: JSON, path: String) throws(SelectorError) -> JSON {
        guard let (key, value) = single(json) else { throw .badField(json) }
        switch key {
        case "$and", "$or", "$nor":
            var parts: [JSON] = []
            for item in value.arrayValue ?? [] { parts.append(try fields(item, path: path)) }
            return member(key, .array(parts))
        case "$not":
            return member(key, try fields(value, path: path))
        case "$elemMatch", "$allMatch", "$keyMapMatch":
            let argument = value.objectValue?.isEmpty == true ? value : try fields(value, path: "")
            return member(path, member(key, argument))
        case "$default":
            guard path.isEmpty, single(value)?.key == "$text" else { throw .badField(json) }
            return json
        default:
            if key.hasPrefix("$") { return member(path, json) }
            return try fields(value, path: path.isEmpty ? key : path + "." + key)
        }
    }

    // MARK: norm_negations

    static func negations(_ json: JSON) -> JSON {
        guard let (key, value) = single(json) else { return json }
        switch key {
        case "$not": return negate(value)
        case "$nor": return member("$and", .array((value.arrayValue ?? []).map(negate)))
        case "$and", "$or": return member(key, .array((value.arrayValue ?? []).map(negations)))
        case "$elemMatch", "$allMatch", "$keyMapMatch": return member(key, negations(value))
        default: return json
        }
    }

    private static let negatedComparisons: [String: String] = [
        "$lt": "$gte", "$lte": "$gt", "$eq": "$ne", "$ne": "$eq", "$gte": "$lt", "$gt": "$lte", "$in": "$nin",
        "$nin": "$in",
    ]

    static func negate(_ json: JSON) -> JSON {
        guard let (key, value) = single(json) else { return json }
        switch key {
        case "$not": return negations(value)
        case "$nor": return member("$or", .array((value.arrayValue ?? []).map(negations)))
        case "$and": return member("$or", .array((value.arrayValue ?? []).map(negate)))
        case "$or": return member("$and", .array((value.arrayValue ?? []).map(negate)))
        case "$exists": return member(key, .bool(!(value.boolValue ?? false)))
        default:
            if let opposite = negatedComparisons[key] { return member(opposite, value) }
            if key.hasPrefix("$") { return member("$not", json) }
            return member(key, negate(value))
        }
    }
}
