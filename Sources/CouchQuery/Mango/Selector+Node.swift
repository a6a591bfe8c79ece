import CouchWire

extension Selector {
    /// A normalized selector compiled for matching: one node per normalized operator, arguments prepared.
    indirect enum Node: Sendable {
        case and([Node])
        case or([Node])
        case not(Node)
        /// A condition on the value at a path (`_id` compares raw); an empty path is the value itself.
        case field(path: [String], raw: Bool, condition: Node)
        case compare(Comparison, argument: JSON, key: [UInt8])
        case `in`(arguments: [JSON], keys: Set<[UInt8]>)
        case nin(arguments: [JSON], keys: Set<[UInt8]>)
        case all([JSON])
        case exists(Bool)
        case type(String)
        case mod(divisor: Int, remainder: Int)
        case beginsWith(String)
        case regex(MangoRegex)
        case size(Int)
        case elemMatch(Node)
        case allMatch(Node)
        case keyMapMatch(Node)
        /// `$text` (`$default`): only a text index answers it, whose rows CouchDB trusts.
        case text

        enum Comparison: Sendable {
            case lt, lte, eq, ne, gte, gt

            func holds(_ order: Int) -> Bool {
                switch self {
                case .lt: order < 0
                case .lte: order <= 0
                case .eq: order == 0
                case .ne: order != 0
                case .gte: order >= 0
                case .gt: order > 0
                }
            }
        }

        // MARK: Compiling

        private static let comparisons: [String: Comparison] = [
            "$lt": .lt, "$lte": .lte, "$eq": .eq, "$ne": .ne, "$gte": .gte, "$gt": .gt,
        ]

        /// The `$regex` programs of one selector as they are compiled: where their bytes are reserved, and how many
        /// the selector has so far (at most ``Selector/maxRegexBytes``).
        struct RegexCompilation {
            let memory: RegexMemory
            var compiledBytes = 0
        }

        /// Compiles a normalized selector (``SelectorNormalizer``'s output, which has validated the arguments).
        static func compile(_ json: JSON, _ regexes: inout RegexCompilation) throws(SelectorError) -> Node {
            guard let (key, value) = SelectorNormalizer.single(json) else {
                if case .object(let object) = json, object.isEmpty { return .and([]) }
                throw .badField(json)
            }
            func children() throws(SelectorError) -> [Node] {
                var nodes: [Node] = []
                for item in value.arrayValue ?? [] { nodes.append(try compile(item, &regexes)) }
                return nodes
            }
            func keys(_ arguments: [JSON]) -> Set<[UInt8]> { Set(arguments.map(ViewCollation.sortKey)) }
            switch key {
            case "$and": return .and(try children())
            case "$or": return .or(try children())
            case "$not": return .not(try compile(value, &regexes))
            case "$in", "$nin":
                let arguments = value.arrayValue ?? []
                return key == "$in"
                    ? .in(arguments: arguments, keys: keys(arguments))
                    : .nin(arguments: arguments, keys: keys(arguments))
            case "$all": return .all(value.arrayValue ?? [])
            case "$exists": return .exists(value.boolValue ?? false)
            case "$type": return .type(value.stringValue ?? "")
            case "$mod":
                return .mod(divisor: value[0]?.intValue ?? 0, remainder: value[1]?.intValue ?? 0)
            case "$beginsWith": return .beginsWith(value.stringValue ?? "")
            case "$regex":
                guard let pattern = value.stringValue else { throw .badArgument(key, value) }
                let regex: MangoRegex
                do {
                    regex = try MangoRegex(pattern, memory: regexes.memory)
                } catch {
                    throw error == .serverFull ? .regexMemoryFull : .badArgument(key, value)
                }
                regexes.compiledBytes &+= regex.compiledBytes  // each at most 1 MiB, refused past 4
                guard regexes.compiledBytes <= Selector.maxRegexBytes else { throw .regexesTooLarge }
                return .regex(regex)
            case "$size": return .size(value.intValue ?? 0)
            case "$elemMatch": return .elemMatch(try compile(value, &regexes))
            case "$allMatch": return .allMatch(try compile(value, &regexes))
            case "$keyMapMatch": return .keyMapMatch(try compile(value, &regexes))
            case "$default": return .text
            default:
                if let comparison = comparisons[key] {
                    return .compare(comparison, argument: value, key: ViewCollation.sortKey(value))
                }
                if key.hasPrefix("$") { throw .invalidOperator(key) }
                let path = key.isEmpty ? [] : Selector.splitFieldPath(key)
                return .field(path: path, raw: key.utf8Equals("_id"), condition: try compile(value, &regexes))
            }
        }

        // MARK: Matching

        /// Whether `value` satisfies this node (`raw`: strings compare by bytes, as `_id` does); `$regex` matches
        /// spend from `budget`.
        func matches(_ value: JSON, raw: Bool, budget: RegexBudget?) -> Bool {
            switch self {
            case .and(let nodes): return nodes.allSatisfy { $0.matches(value, raw: raw, budget: budget) }
            case .or(let nodes): return nodes.isEmpty || nodes.contains { $0.matches(value, raw: raw, budget: budget) }
            case .not(let node): return !node.matches(value, raw: raw, budget: budget)
            case .field(let path, let fieldRaw, let condition):
                switch FieldLookup(path, in: value) {
                case .found(let found): return condition.matches(found, raw: fieldRaw, budget: budget)
                case .missing:
                    if case .exists(false) = condition { return true }
                    return false
                case .badPath: return false
                }
            case .compare(let comparison, let argument, let key):
                return comparison.holds(Node.order(value, argument, key, raw: raw))
            case .in(let arguments, let keys):
                return Node.isIn(value, arguments, keys, raw: raw)
            case .nin(let arguments, let keys):
                if arguments.isEmpty { return true }
                if case .array = value { return !Node.isIn(value, arguments, keys, raw: raw) }
                return !Node.contains(value, arguments, keys, raw: raw)
            case .all(let arguments):
                guard case .array(let elements) = value, !arguments.isEmpty else { return false }
                if arguments.allSatisfy({ elements.contains($0) }) { return true }
                if arguments.count == 1, case .array(let only) = arguments[0] { return only == elements }
                return false
            case .exists(let flag): return flag
            case .type(let name): return Node.typeName(value) == name
            case .mod(let divisor, let remainder):
                guard divisor != 0, let integer = value.intValue else { return false }
                return integer % divisor == remainder
            case .beginsWith(let prefix):
                guard case .string(let text) = value else { return false }
                return text.utf8.starts(with: prefix.utf8)
            case .regex(let regex):
                guard case .string(let text) = value else { return false }
                return regex.matches(text, budget: budget)
            case .size(let count):
                guard case .array(let elements) = value else { return false }
                return elements.count == count
            case .elemMatch(let node):
                guard case .array(let elements) = value else { return false }
                return elements.contains { node.matches($0, raw: raw, budget: budget) }
            case .allMatch(let node):
                guard case .array(let elements) = value, !elements.isEmpty else { return false }
                return elements.allSatisfy { node.matches($0, raw: raw, budget: budget) }
            case .keyMapMatch(let node):
                guard case .object(let object) = value else { return false }
                return object.contains { node.matches(.string($0.key), raw: raw, budget: budget) }
            case .text: return true
            }
        }

        /// `mango_json:type/1`.
        static func typeName(_ value: JSON) -> String {
            switch value {
            case .null: "null"
            case .bool: "boolean"
            case .number: "number"
            case .string: "string"
            case .array: "array"
            case .object: "object"
            }
        }

        private static func order(_ value: JSON, _ argument: JSON, _ key: [UInt8], raw: Bool) -> Int {
            if raw { return RawCollation.compare(value, argument) }
            let valueKey = ViewCollation.sortKey(value)
            if valueKey == key { return 0 }
            return valueKey.lexicographicallyPrecedes(key) ? -1 : 1
        }

        private static func contains(_ value: JSON, _ arguments: [JSON], _ keys: Set<[UInt8]>, raw: Bool) -> Bool {
            if raw { return arguments.contains { RawCollation.compare(value, $0) == 0 } }
            return keys.contains(ViewCollation.sortKey(value))
        }

        /// `$in`: an array field matches when any of its elements equals any argument (CouchDB behaviour).
        private static func isIn(_ value: JSON, _ arguments: [JSON], _ keys: Set<[UInt8]>, raw: Bool) -> Bool {
            if case .array(let elements) = value {
                return elements.contains { contains($0, arguments, keys, raw: raw) }
            }
            return contains(value, arguments, keys, raw: raw)
        }
    }
}
