/// A JSON value as CouchDB sees it: objects keep their member order and numbers keep their exact text.
///
/// Parse with ``JSON/parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)`` (strict RFC 8259) and write with
/// ``JSON/serialize(into:)`` (compact, escaped like CouchDB's jiffy encoder).
/// See [RFC 8259](https://www.rfc-editor.org/rfc/rfc8259).
///
/// Equality is structural and exact: strings and keys compare by UTF-8 bytes (not Swift's canonical
/// equivalence), numbers by their text, objects member by member in order.
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSON])
    case object(JSONObject)

    /// Structural equality, computed with a heap worklist rather than recursion so that deeply nested
    /// values cannot exhaust a small thread stack.
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        var pending: [(JSON, JSON)] = [(lhs, rhs)]
        while let (left, right) = pending.popLast() {
            switch (left, right) {
            case (.null, .null):
                continue
            case (.bool(let l), .bool(let r)):
                guard l == r else { return false }
            case (.number(let l), .number(let r)):
                guard l == r else { return false }
            case (.string(let l), .string(let r)):
                guard l.utf8Equals(r) else { return false }
            case (.array(let l), .array(let r)):
                guard l.count == r.count else { return false }
                for (a, b) in zip(l, r) { pending.append((a, b)) }
            case (.object(let l), .object(let r)):
                guard l.count == r.count else { return false }
                for (a, b) in zip(l, r) {
                    guard a.key.utf8Equals(b.key) else { return false }
                    pending.append((a.value, b.value))
                }
            default:
                return false
            }
        }
        return true
    }
}

extension JSON {
    /// The deepest nesting of arrays and objects ``parse(_:maxDepth:)-(UnsafeRawBufferPointer,_)`` accepts
    /// by default, in container levels (`[]` is depth 1).
    public static let defaultMaxDepth: Int = 512

    /// A number value from an integer.
    public static func int(_ value: Int) -> JSON { .number(JSONNumber(value)) }

    /// A number value from a double; non-finite values become `null`, as JavaScript's `JSON.stringify` does.
    public static func double(_ value: Double) -> JSON {
        guard let number = JSONNumber(value) else { return .null }
        return .number(number)
    }

    /// The string, or nil when this is not a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean, or nil when this is not a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer, or nil when this is not a number written as an integer that fits in `Int`.
    public var intValue: Int? {
        if case .number(let value) = self { return value.intValue }
        return nil
    }

    /// The number, or nil when this is not a number.
    public var numberValue: JSONNumber? {
        if case .number(let value) = self { return value }
        return nil
    }

    /// The elements, or nil when this is not an array.
    public var arrayValue: [JSON]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members, or nil when this is not an object.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member named `key`, or nil when this is not an object or has no such member.
    public subscript(key: String) -> JSON? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index`, or nil when this is not an array or `index` is out of bounds.
    public subscript(index: Int) -> JSON? {
        if case .array(let elements) = self, elements.indices.contains(index) { return elements[index] }
        return nil
    }
}
