/// A JSON number kept as the exact text it was sent with, so `1.0e10`, `12345678901234567890` and `-0`
/// round-trip byte for byte (CouchDB computes revision hashes over bodies, and replicas must agree).
///
/// Equality and hashing compare the text: `1.0` and `1` are different numbers here.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The number's text, valid under the RFC 8259 number grammar.
    public let text: String

    /// A number from its text.
    ///
    /// - Parameter text: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`; nothing else (no `+1`, `.5`,
    ///   `1.`, `01`, `NaN`, `Infinity`, no surrounding spaces).
    /// - Returns: nil when `text` is not a valid JSON number.
    public init?(_ text: String) {
        var copy = text
        let valid = copy.withUTF8 { bytes in
            JSONNumber.grammarEnd(UnsafeRawBufferPointer(bytes), from: 0) == .success(bytes.count)
        }
        guard valid else { return nil }
        self.text = text
    }

    /// A number from an integer.
    public init(_ value: Int) {
        self.text = String(value)
    }

    /// A number from a finite double, written as the shortest text that reads back as the same value.
    ///
    /// - Returns: nil for NaN and infinities, which JSON cannot express.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        // Swift's description is already valid JSON for finite values ("5.0", "1e-07", "1e+20").
        self.text = value.description
    }

    /// Text already checked by the parser.
    init(validatedText: String) {
        self.text = validatedText
    }

    /// The value when the text is an integer (no fraction, no exponent) that fits in `Int`; `"5.0"` gives nil.
    public var intValue: Int? { Int(text) }

    /// The nearest double, or nil when the magnitude overflows a double (`1e999`).
    public var doubleValue: Double? {
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    public var description: String { text }
}

extension JSONNumber {
    /// Where a number starting at `start` ends, or the offset and kind of the first grammar violation.
    static func grammarEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Result<Int, JSONError> {
        let count = bytes.count
        var i = start
        @inline(__always) func isDigit(_ i: Int) -> Bool { i < count && bytes[i] &- UInt8(ascii: "0") < 10 }
        if i < count && bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < count else { return .failure(JSONError(.invalidNumber, at: i)) }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { return .failure(JSONError(.invalidNumber, at: i)) }  // leading zero
        } else if isDigit(i) {
            i += 1
            while isDigit(i) { i += 1 }
        } else {
            return .failure(JSONError(.invalidNumber, at: i))
        }
        if i < count && bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard isDigit(i) else { return .failure(JSONError(.invalidNumber, at: i)) }
            while isDigit(i) { i += 1 }
        }
        if i < count && (bytes[i] | 0x20) == UInt8(ascii: "e") {
            i += 1
            if i < count && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i += 1 }
            guard isDigit(i) else { return .failure(JSONError(.invalidNumber, at: i)) }
            while isDigit(i) { i += 1 }
        }
        return .success(i)
    }
}
