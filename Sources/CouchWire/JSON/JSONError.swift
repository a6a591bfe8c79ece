/// Why a byte sequence is not a JSON text, and the byte offset where that became clear.
public struct JSONError: Error, CustomStringConvertible, Equatable {
    /// The kinds of violation, each mapping to one RFC 8259 rule (or to a limit of ours).
    public enum Kind: Sendable, Equatable {
        /// The input ended inside a value (or was empty).
        case unexpectedEnd
        /// A byte that cannot start or continue a value here (including `NaN`, `Infinity`, `'`, and a lone `,`).
        case unexpectedCharacter
        /// A number breaking the grammar: leading zero, `+1`, `.5`, `1.`, `1e`, a bare `-`.
        case invalidNumber
        /// A backslash followed by something other than `"\/bfnrtu`, or `\u` without four hex digits.
        case invalidEscape
        /// A `\u` escape of a UTF-16 surrogate without its partner.
        case loneSurrogate
        /// A raw byte below 0x20 inside a string; these must be escaped.
        case controlCharacterInString
        /// Bytes that are not well-formed UTF-8 (overlong, surrogate, above U+10FFFF, truncated).
        case invalidUTF8
        /// A UTF-8 byte order mark at the start; RFC 8259 §8.1 forbids sending one.
        case byteOrderMark
        /// Something other than whitespace after the top-level value.
        case trailingData
        /// Arrays and objects nested deeper than the parser's `maxDepth`.
        case tooDeep
        /// The parsed value would hold more memory than the caller's `memoryBudget` allows (many tiny
        /// containers: each costs a heap allocation of 48 bytes or more for a few bytes of input).
        case tooLarge
    }

    /// What was wrong.
    public var kind: Kind
    /// The byte offset of the offending byte (the input length for ``Kind/unexpectedEnd``).
    public var offset: Int

    /// An error of `kind` at byte `offset`.
    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String {
        let what: String
        switch kind {
        case .unexpectedEnd: what = "unexpected end of input"
        case .unexpectedCharacter: what = "unexpected character"
        case .invalidNumber: what = "invalid number"
        case .invalidEscape: what = "invalid escape sequence"
        case .loneSurrogate: what = "unpaired UTF-16 surrogate escape"
        case .controlCharacterInString: what = "unescaped control character in string"
        case .invalidUTF8: what = "invalid UTF-8"
        case .byteOrderMark: what = "byte order mark"
        case .trailingData: what = "trailing data after JSON value"
        case .tooDeep: what = "nesting too deep"
        case .tooLarge: what = "value too large to hold in memory"
        }
        return "JSON error: \(what) at byte \(offset)"
    }
}
