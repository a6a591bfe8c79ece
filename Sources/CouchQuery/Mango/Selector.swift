import CouchWire

/// A CouchDB Mango selector, compiled for matching: the full operator set of CouchDB 3.4
/// (`$and $or $nor $not $lt $lte $eq $ne $gte $gt $exists $type $in $nin $all $size $mod $regex $elemMatch
/// $allMatch $keyMapMatch $beginsWith`), implicit `$eq` and `$and`, nested fields by object nesting and by dotted
/// paths (`"a.b"`, `\.` for a literal dot, digits indexing arrays). One matcher serves `_find` and
/// `_changes?filter=_selector`.
///
/// The selector is first normalized as CouchDB does (``normalized``, what `_explain` shows; see
/// ``SelectorNormalizer``), then compiled to a tree whose comparison arguments carry their collation keys and
/// whose regular expressions are compiled once. Semantics follow `mango_selector:match/3`: a condition on a
/// missing field is false except `$exists: false`; `_id` compares raw (Erlang term order, ``RawCollation``), other
/// values in view collation (``ViewCollation``, CouchDB's ICU order).
/// See [CouchDB selector syntax](https://docs.couchdb.org/en/stable/api/database/find.html#selector-syntax).
public struct Selector: Sendable {
    /// The deepest nesting of the selector JSON accepted (operators, fields and arguments together), so that
    /// normalizing and matching stay within small stacks. CouchDB has no such bound.
    public static let maxDepth = 128
    /// The most bytes the compiled `$regex` programs of one selector may take together (each may take
    /// ``MangoRegex/maxCompiledBytes``).
    public static let maxRegexBytes = 4 << 20

    /// CouchDB's normalized form of the selector (`{}` stays `{}`).
    public let normalized: JSON
    let root: Node

    /// Compiles a selector.
    ///
    /// - Parameters:
    ///   - json: The selector object; `{}` matches every document.
    ///   - regexMemory: Where the compiled `$regex` programs reserve their bytes while the selector lives.
    /// - Throws: ``SelectorError`` with CouchDB's error name: a non-object selector, an unknown operator
    ///   (`invalid_operator`), a bad argument (`bad_arg`), a condition without a field (`invalid_selector`),
    ///   nesting deeper than ``maxDepth``, `$regex` programs over ``maxRegexBytes`` (400) or over what
    ///   `regexMemory` has left (503).
    public init(_ json: JSON, regexMemory: RegexMemory = .server) throws(SelectorError) {
        guard case .object = json else { throw SelectorError(reason: "Selector must be a JSON object") }
        guard !Selector.nestingExceeds(json, Selector.maxDepth) else { throw .tooDeep }
        normalized = try SelectorNormalizer.normalize(json)
        var regexes = Node.RegexCompilation(memory: regexMemory)
        root = try Node.compile(normalized, &regexes)
        regexBytes = regexes.compiledBytes
    }

    /// The bytes of this selector's compiled `$regex` programs.
    public let regexBytes: Int

    /// Whether `doc` satisfies the selector; its `$regex` matches spend from `budget` (none: each match is bounded
    /// alone). Once `budget` is spent the answer means nothing: the caller checks ``RegexBudget/isSpent`` and fails.
    public func matches(_ doc: JSON, budget: RegexBudget? = nil) -> Bool {
        root.matches(doc, raw: false, budget: budget)
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

    /// Splits a field name into its path as `mango_util:parse_field` does: at each `.` not right after a `\`, then
    /// every `\` dropped, so `a\.b` is the one member `a.b` and `\$foo` the member `$foo` (a name a selector could
    /// not otherwise give, since a key starting with `$` is an operator).
    public static func splitFieldPath(_ field: String) -> [String] {
        let (dot, backslash) = (UInt8(ascii: "."), UInt8(ascii: "\\"))
        var parts: [String] = []
        var current: [UInt8] = []
        var previous: UInt8 = 0
        for byte in field.utf8 {
            if byte == dot && previous != backslash {
                parts.append(String(decoding: current, as: UTF8.self))
                current.removeAll()
            } else if byte != backslash {
                current.append(byte)
            }
            previous = byte
        }
        parts.append(String(decoding: current, as: UTF8.self))
        return parts
    }
}

/// The outcome of following a field path into a document (`mango_doc:get_field/2`).
public enum FieldLookup {
    case found(JSON)
    /// An object along the path lacks the member (or an array index is out of range).
    case missing
    /// The path runs into a scalar, or a non-numeric name meets an array.
    case badPath

    /// Follows `path` into `doc`.
    public init(_ path: [String], in doc: JSON) {
        var current = doc
        for name in path {
            switch current {
            case .object(let object):
                guard let next = object[name] else {
                    self = .missing
                    return
                }
                current = next
            case .array(let elements):
                guard !name.isEmpty, name.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else {
                    self = .badPath
                    return
                }
                guard let position = Int(name), position < elements.count else {
                    self = .missing
                    return
                }
                current = elements[position]
            default:
                self = .badPath
                return
            }
        }
        self = .found(current)
    }
}
