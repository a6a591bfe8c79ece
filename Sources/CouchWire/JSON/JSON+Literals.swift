// JSON is deliberately not `ExpressibleByNilLiteral`: with it, `cond ? value : nil` and `["k": nil]` silently became
// JSON `null` where `Optional.none` was meant, and `json == nil` could mean either. A JSON null is spelled `.null`.

extension JSON: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSON: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
}

extension JSON: ExpressibleByFloatLiteral {
    /// A number from a float literal, written as the shortest text that reads back as the same double
    /// (Swift hands literals over as `Double`, so `1.50` becomes `"1.5"`).
    public init(floatLiteral value: Double) {
        // A literal is never NaN or infinite unless the programmer wrote an overflowing one.
        guard let number = JSONNumber(value) else { preconditionFailure("Non-finite JSON float literal: \(value)") }
        self = .number(number)
    }
}

extension JSON: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSON: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
}

extension JSON: ExpressibleByDictionaryLiteral {
    /// An object whose members keep the literal's order (a repeated key keeps its first position, last value).
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(JSONObject(elements)) }
}
