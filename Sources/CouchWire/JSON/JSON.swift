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

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let left), .bool(let right)): return left == right
        case (.number(let left), .number(let right)): return left == right
        case (.string(let left), .string(let right)): return left.utf8Equals(right)
        case (.array(let left), .array(let right)): return left == right
        case (.object(let left), .object(let right)): return left == right
        default: return false
        }
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
