/// A subset of CouchDB Mango selectors, enough for `_changes?filter=_selector`.
///
/// Supported: implicit equality (`{"type":"photo"}`), nested fields by object nesting and by dotted paths
/// (`"a.b"`, with `\.` for a literal dot and digits indexing arrays), `$eq $ne $gt $gte $lt $lte $in $nin
/// $exists $and $or $nor $not`. Anything else (`$regex`, `$elemMatch`, `$size`, …) is refused with
/// "Invalid operator: …".
///
/// Semantics follow CouchDB's `mango_selector`: negations are pushed down to the fields (`$not $eq` becomes
/// `$ne`, De Morgan for `$and`/`$or`), and a condition on a missing field is false except `$exists: false`.
/// So `{"a":{"$ne":1}}` and `{"$not":{"a":1}}` both fail on a document without `a`. Comparisons use
/// ``JSONCollation`` (strings by Unicode scalar value, not ICU).
/// See [CouchDB selector syntax](https://docs.couchdb.org/en/stable/api/database/find.html#selector-syntax).
public struct Selector: Sendable {
    /// The deepest nesting of operators and fields accepted, so that matching stays within small stacks.
    public static let maxDepth = 64

    indirect enum Node: Sendable {
        case all([Node])
        case any([Node])
        case field(path: [String], condition: Condition)
    }

    enum Condition: Sendable {
        case eq(JSON)
        case ne(JSON)
        case gt(JSON)
        case gte(JSON)
        case lt(JSON)
        case lte(JSON)
        case `in`([JSON])
        case nin([JSON])
        case exists(Bool)

        var negated: Condition {
            switch self {
            case .eq(let value): return .ne(value)
            case .ne(let value): return .eq(value)
            case .gt(let value): return .lte(value)
            case .gte(let value): return .lt(value)
            case .lt(let value): return .gte(value)
            case .lte(let value): return .gt(value)
            case .in(let values): return .nin(values)
            case .nin(let values): return .in(values)
            case .exists(let flag): return .exists(!flag)
            }
        }
    }

    let root: Node

    /// Compiles a selector.
    ///
    /// - Parameter json: The selector object; `{}` matches every document.
    /// - Throws: ``SelectorError`` for a non-object selector, an unsupported or unknown operator, a bad
    ///   operator argument, an operator without a field, or nesting deeper than ``maxDepth``.
    public init(_ json: JSON) throws(SelectorError) {
        guard case .object = json else { throw SelectorError(reason: "Selector must be a JSON object") }
        root = try Selector.compile(json, path: [], negated: false, depth: 0)
    }

    /// Whether `doc` satisfies the selector.
    public func matches(_ doc: JSON) -> Bool { Selector.evaluate(root, doc) }
}

extension Selector {
    private static func compile(_ json: JSON, path: [String], negated: Bool, depth: Int) throws(SelectorError) -> Node {
        guard depth <= maxDepth else { throw SelectorError(reason: "Selector is nested too deeply") }
        guard case .object(let object) = json, !(object.isEmpty && !path.isEmpty) else {
            // A bare value (or `{}` under a field) means equality with it.
            return try leaf(path: path, condition: .eq(json), negated: negated)
        }
        if object.isEmpty { return negated ? .any([]) : .all([]) }  // `{}` matches everything
        if object.count > 1 {
            // Several members are an implicit $and.
            var parts: [Node] = []
            for (key, value) in object {
                parts.append(try compileMember(key, value, path: path, negated: negated, depth: depth))
            }
            return negated ? .any(parts) : .all(parts)
        }
        let (key, value) = object[0]
        return try compileMember(key, value, path: path, negated: negated, depth: depth)
    }

    private static func compileMember(
        _ key: String, _ value: JSON, path: [String], negated: Bool, depth: Int
    ) throws(SelectorError) -> Node {
        guard key.hasPrefix("$") else {
            return try compile(value, path: path + splitFieldPath(key), negated: negated, depth: depth + 1)
        }
        func list() throws(SelectorError) -> [JSON] {
            guard case .array(let items) = value else { throw badArgument(key, value) }
            return items
        }
        func children(negated childNegated: Bool) throws(SelectorError) -> [Node] {
            var nodes: [Node] = []
            for item in try list() {
                guard case .object = item else { throw badArgument(key, value) }
                nodes.append(try compile(item, path: path, negated: childNegated, depth: depth + 1))
            }
            return nodes
        }
        switch key {
        case "$and":
            let nodes = try children(negated: negated)
            return negated ? .any(nodes) : .all(nodes)
        case "$or":
            let nodes = try children(negated: negated)
            return negated ? .all(nodes) : .any(nodes)
        case "$nor":
            let nodes = try children(negated: !negated)
            return negated ? .any(nodes) : .all(nodes)
        case "$not":
            guard case .object = value else { throw badArgument(key, value) }
            return try compile(value, path: path, negated: !negated, depth: depth + 1)
        case "$eq": return try leaf(path: path, condition: .eq(value), negated: negated)
        case "$ne": return try leaf(path: path, condition: .ne(value), negated: negated)
        case "$gt": return try leaf(path: path, condition: .gt(value), negated: negated)
        case "$gte": return try leaf(path: path, condition: .gte(value), negated: negated)
        case "$lt": return try leaf(path: path, condition: .lt(value), negated: negated)
        case "$lte": return try leaf(path: path, condition: .lte(value), negated: negated)
        case "$in": return try leaf(path: path, condition: .in(try list()), negated: negated)
        case "$nin": return try leaf(path: path, condition: .nin(try list()), negated: negated)
        case "$exists":
            guard case .bool(let flag) = value else { throw badArgument(key, value) }
            return try leaf(path: path, condition: .exists(flag), negated: negated)
        default:
            throw SelectorError(reason: "Invalid operator: \(key)")
        }
    }

    private static func leaf(path: [String], condition: Condition, negated: Bool) throws(SelectorError) -> Node {
        guard !path.isEmpty else { throw SelectorError(reason: "Invalid selector: missing field name") }
        // Comparisons recurse through both values in step, so a shallow argument keeps them shallow
        // whatever the document's depth.
        let arguments: [JSON]
        switch condition {
        case .eq(let value), .ne(let value), .gt(let value), .gte(let value), .lt(let value), .lte(let value):
            arguments = [value]
        case .in(let values), .nin(let values): arguments = values
        case .exists: arguments = []
        }
        guard arguments.allSatisfy({ nestingExceeds($0, maxDepth) == false }) else {
            throw SelectorError(reason: "Selector is nested too deeply")
        }
        return .field(path: path, condition: negated ? condition.negated : condition)
    }

    /// Whether `value` nests arrays and objects deeper than `limit` levels (checked without recursion).
    static func nestingExceeds(_ value: JSON, _ limit: Int) -> Bool {
        var pending: [(JSON, Int)] = [(value, 0)]
        while let (item, depth) = pending.popLast() {
            switch item {
            case .array(let elements):
                guard depth < limit else { return true }
                for element in elements { pending.append((element, depth + 1)) }
            case .object(let object):
                guard depth < limit else { return true }
                for member in object { pending.append((member.value, depth + 1)) }
            default:
                continue
            }
        }
        return false
    }

    private static func badArgument(_ key: String, _ value: JSON) -> SelectorError {
        SelectorError(reason: "Bad argument for operator \(key): \(value.serializedString)")
    }

    /// Splits `a.b` into `["a", "b"]`; `\.` is a literal dot (as in Mango's `mango_util:parse_field`).
    static func splitFieldPath(_ field: String) -> [String] {
        var parts: [String] = []
        var current: [UInt8] = []
        var escaping = false
        for byte in field.utf8 {
            if escaping {
                if byte != UInt8(ascii: ".") { current.append(UInt8(ascii: "\\")) }
                current.append(byte)
                escaping = false
            } else if byte == UInt8(ascii: "\\") {
                escaping = true
            } else if byte == UInt8(ascii: ".") {
                parts.append(String(decoding: current, as: UTF8.self))
                current.removeAll()
            } else {
                current.append(byte)
            }
        }
        if escaping { current.append(UInt8(ascii: "\\")) }
        parts.append(String(decoding: current, as: UTF8.self))
        return parts
    }
}

extension Selector {
    private enum Lookup {
        case found(JSON)
        /// An object along the path lacks the member (or an array index is out of range).
        case missing
        /// The path runs into a scalar, or a non-numeric name meets an array.
        case badPath
    }

    private static func evaluate(_ node: Node, _ doc: JSON) -> Bool {
        switch node {
        case .all(let nodes): return nodes.allSatisfy { evaluate($0, doc) }
        case .any(let nodes): return nodes.contains { evaluate($0, doc) }
        case .field(let path, let condition):
            switch lookup(path, in: doc) {
            case .found(let value): return test(condition, value)
            case .missing:
                if case .exists(false) = condition { return true }
                return false
            case .badPath: return false
            }
        }
    }

    private static func lookup(_ path: [String], in doc: JSON) -> Lookup {
        var current = doc
        for name in path {
            switch current {
            case .object(let object):
                guard let next = object[name] else { return .missing }
                current = next
            case .array(let elements):
                guard !name.isEmpty, name.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else { return .badPath }
                guard let position = Int(name), position < elements.count else { return .missing }
                current = elements[position]
            default:
                return .badPath
            }
        }
        return .found(current)
    }

    /// Tests a found value. CouchDB compares `_id` raw and other strings with ICU; ours compares every
    /// string by bytes, which is exactly the raw rule.
    private static func test(_ condition: Condition, _ value: JSON) -> Bool {
        func order(_ argument: JSON) -> Int { JSONCollation.compare(value, argument) }
        switch condition {
        case .eq(let argument): return order(argument) == 0
        case .ne(let argument): return order(argument) != 0
        case .gt(let argument): return order(argument) > 0
        case .gte(let argument): return order(argument) >= 0
        case .lt(let argument): return order(argument) < 0
        case .lte(let argument): return order(argument) <= 0
        case .in(let arguments): return isIn(value, arguments)
        case .nin(let arguments):
            if case .array = value { return !isIn(value, arguments) }
            return arguments.allSatisfy { JSONCollation.compare(value, $0) != 0 }
        case .exists(let flag): return flag  // the field was found
        }
    }

    /// `$in`: an array field matches when any of its elements equals any argument (CouchDB behaviour).
    private static func isIn(_ value: JSON, _ arguments: [JSON]) -> Bool {
        if case .array(let elements) = value {
            return arguments.contains { argument in elements.contains { JSONCollation.compare($0, argument) == 0 } }
        }
        return arguments.contains { JSONCollation.compare(value, $0) == 0 }
    }
}
