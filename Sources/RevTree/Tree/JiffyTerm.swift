/// A JSON text as the Erlang term `jiffy:decode/2` gives CouchDB: what `RevisionHash` hashes as the body.
///
/// Objects are `{[{Key, Value}, …]}` in the order sent, strings binaries of their UTF-8 bytes (escapes decoded),
/// `true`/`false`/`null` atoms, arrays lists. A number with neither fraction nor exponent is an integer of any
/// size (`-0` is `0`); any other is the nearest double (`1.0` and `1e2` are floats, not integers).
///
/// The input is a body couchlite already parsed and serialized, so it is valid JSON; anything else (or a body
/// CouchDB itself refuses: a float beyond the double range, an integer of more than `maxIntegerDigits` digits,
/// nesting beyond `maxDepth`) gives nil rather than a guess, and the caller hashes the raw bytes instead.
public enum JiffyTerm {
    /// Deeper than couchlite's JSON parser accepts (512), so reached only by bytes that did not come from it.
    public static let maxDepth = 1024
    /// CouchDB 3.4.3 already answers 500 (`badarith`) for a 400-digit integer; this bound keeps the quadratic
    /// decimal-to-binary conversion of a hostile body cheap.
    public static let maxIntegerDigits = 1000

    /// The term of a JSON text, or nil when it is not valid JSON or is beyond the bounds above.
    public static func decode(_ bytes: [UInt8]) -> ErlangTerm? {
        var reader = Reader(bytes: bytes)
        guard let term = reader.value(depth: 0) else { return nil }
        reader.skipSpace()
        return reader.index == bytes.count ? term : nil
    }

    /// The magnitude (little-endian bytes) of a string of decimal digits.
    static func magnitude(decimal digits: ArraySlice<UInt8>) -> [UInt8] {
        // Base 10^19 chunks into 64-bit limbs: 19 digits at a time keeps the product within 128 bits.
        var limbs: [UInt64] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let end = min(index + 19, digits.endIndex)
            var chunk: UInt64 = 0
            var scale: UInt64 = 1
            for digit in digits[index..<end] {
                chunk = chunk * 10 + UInt64(digit - UInt8(ascii: "0"))
                scale *= 10
            }
            var carry = chunk
            for i in limbs.indices {
                let (high, low) = limbs[i].multipliedFullWidth(by: scale)
                let (sum, overflow) = low.addingReportingOverflow(carry)
                limbs[i] = sum
                carry = high + (overflow ? 1 : 0)
            }
            if carry != 0 { limbs.append(carry) }
            index = end
        }
        var bytes: [UInt8] = []
        for limb in limbs {
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: limb >> shift)) }
        }
        while bytes.last == 0 { bytes.removeLast() }
        return bytes
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) -> ErlangTerm? {
            skipSpace()
            guard index < bytes.count, depth < JiffyTerm.maxDepth else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth + 1)
            case UInt8(ascii: "["): return array(depth: depth + 1)
            case UInt8(ascii: "\""): return string().map { .binary($0) }
            case UInt8(ascii: "t"): return literal("true").map { .atom("true") }
            case UInt8(ascii: "f"): return literal("false").map { .atom("false") }
            case UInt8(ascii: "n"): return literal("null").map { .atom("null") }
            default: return number()
            }
        }

        mutating func literal(_ word: String) -> Void? {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected)
            else { return nil }
            index += expected.count
            return ()
        }

        mutating func object(depth: Int) -> ErlangTerm? {
            index += 1
            var members: [ErlangTerm] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .tuple([.list([])])
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let member = value(depth: depth) else { return nil }
                members.append(.tuple([.binary(key), member]))
                skipSpace()
                guard index < bytes.count else { return nil }
                index += 1
                if bytes[index - 1] == UInt8(ascii: "}") { return .tuple([.list(members)]) }
                guard bytes[index - 1] == UInt8(ascii: ",") else { return nil }
            }
        }

        mutating func array(depth: Int) -> ErlangTerm? {
            index += 1
            var elements: [ErlangTerm] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .list([])
            }
            while true {
                guard let element = value(depth: depth) else { return nil }
                elements.append(element)
                skipSpace()
                guard index < bytes.count else { return nil }
                index += 1
                if bytes[index - 1] == UInt8(ascii: "]") { return .list(elements) }
                guard bytes[index - 1] == UInt8(ascii: ",") else { return nil }
            }
        }

        /// The UTF-8 bytes of a string literal starting at its opening quote, escapes decoded.
        mutating func string() -> [UInt8]? {
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return out
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let scalar = unicodeEscape() else { return nil }
                        out += Array(String(Character(scalar)).utf8)
                    default: return nil
                    }
                case 0..<0x20: return nil
                default: out.append(byte)
                }
            }
            return nil
        }

        /// The scalar of `XXXX` (after `\u`), joining a surrogate pair; a lone surrogate is refused.
        mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let first = hex4() else { return nil }
            if (0xD800..<0xDC00).contains(first) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { return nil }
                index += 2
                guard let second = hex4(), (0xDC00..<0xE000).contains(second) else { return nil }
                return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
            }
            return Unicode.Scalar(first)
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - index >= 4 else { return nil }
            var value: UInt32 = 0
            for byte in bytes[index..<index + 4] {
                guard let digit = hexValue(byte) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        /// A number: an integer term when the text has no fraction and no exponent, else a float.
        mutating func number() -> ErlangTerm? {
            let start = index
            let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
            if negative { index += 1 }
            let digitsStart = index
            skipDigits()
            let digitsEnd = index
            guard digitsEnd > digitsStart, bytes[digitsStart] != UInt8(ascii: "0") || digitsEnd - digitsStart == 1
            else { return nil }
            var isFloat = false
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isFloat = true
                index += 1
                guard skipDigits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                isFloat = true
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard skipDigits() > 0 else { return nil }
            }
            if isFloat {
                guard let text = String(validating: bytes[start..<index], as: UTF8.self), let value = Double(text),
                    value.isFinite
                else { return nil }
                return .float(value)
            }
            guard digitsEnd - digitsStart <= JiffyTerm.maxIntegerDigits else { return nil }
            let magnitude = JiffyTerm.magnitude(decimal: bytes[digitsStart..<digitsEnd])
            return .integer(negative: negative && !magnitude.isEmpty, magnitude: magnitude)
        }

        @discardableResult
        mutating func skipDigits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 { index += 1 }
            return index - start
        }
    }
}
