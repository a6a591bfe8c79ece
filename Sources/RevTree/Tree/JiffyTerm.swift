/// A JSON text as the Erlang term `jiffy:decode/2` gives CouchDB, written straight to its external format: what
/// `RevisionHash` hashes as the body.
///
/// Objects are `{[{Key, Value}, …]}` in the order sent, strings binaries of their UTF-8 bytes (escapes decoded),
/// `true`/`false`/`null` atoms, arrays lists. A number with neither fraction nor exponent is an integer of any
/// size (`-0` is `0`); any other is the nearest double (`1.0` and `1e2` are floats, not integers). The encoding is
/// `ErlangTerm`'s, produced in one pass without building the term (the length of a list is patched in when it
/// closes, and a list of integers 0…255 is then packed into a `STRING_EXT`), since every interactive write pays it.
///
/// The input is a body couchlite already parsed and serialized, so it is valid JSON; anything else (or a body
/// CouchDB itself refuses: a float beyond the double range, an integer of more than `maxIntegerDigits` digits,
/// nesting beyond `maxDepth`) is refused rather than guessed, and the caller hashes the raw bytes instead.
public enum JiffyTerm {
    /// Deeper than couchlite's JSON parser accepts (512), so reached only by bytes that did not come from it.
    public static let maxDepth = 1024
    /// CouchDB 3.4.3 already answers 500 (`badarith`) for a 400-digit integer; this bound keeps the quadratic
    /// decimal-to-binary conversion of a hostile body cheap.
    public static let maxIntegerDigits = 1000

    /// Appends the external format of the term of a JSON text (without the version byte) to `out`.
    /// - Returns: false, with `out` as it was, when the text is not valid JSON or is beyond the bounds above.
    public static func encode(_ bytes: [UInt8], into out: inout [UInt8]) -> Bool {
        let mark = out.count
        var writer = Writer(bytes: bytes, out: out)
        out = []  // `writer` owns the buffer meanwhile, so appending never copies it
        let ok = writer.value(depth: 0) && writer.atEnd()
        out = writer.out
        if !ok { out.removeSubrange(mark...) }
        return ok
    }

    /// The external format (without the version byte) of a JSON text's term, or nil; see `encode(_:into:)`.
    public static func encoded(_ bytes: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        return encode(bytes, into: &out) ? out : nil
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

    private struct Writer {
        let bytes: [UInt8]
        var out: [UInt8]
        var index = 0

        init(bytes: [UInt8], out: [UInt8]) {
            self.bytes = bytes
            self.out = out
        }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func atEnd() -> Bool {
            skipSpace()
            return index == bytes.count
        }

        mutating func peek(_ byte: UInt8) -> Bool {
            skipSpace()
            return index < bytes.count && bytes[index] == byte
        }

        /// Writes one value. `small` is set when it was an integer 0…255 (a candidate for a `STRING_EXT`).
        mutating func value(depth: Int, small: UnsafeMutablePointer<Bool>? = nil) -> Bool {
            skipSpace()
            guard index < bytes.count, depth < JiffyTerm.maxDepth else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth + 1)
            case UInt8(ascii: "["): return array(depth: depth + 1)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number(small: small)
            }
        }

        /// `true`, `false` or `null`, written as the atom of that name.
        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            let matches = word.withUTF8Buffer { expected in
                bytes.count - index >= count && bytes[index..<index + count].elementsEqual(expected)
            }
            guard matches else { return false }
            index += count
            out += [100, 0, UInt8(count)]
            word.withUTF8Buffer { out += $0 }
            return true
        }

        /// Starts a `LIST_EXT` whose length is patched by `closeList`; returns where its header is.
        mutating func openList() -> Int {
            out += [108, 0, 0, 0, 0]
            return out.count - 5
        }

        mutating func closeList(at header: Int, count: Int) {
            Self.patch(UInt32(truncatingIfNeeded: count), at: header + 1, in: &out)
            out.append(106)
        }

        mutating func object(depth: Int) -> Bool {
            index += 1
            out += [104, 1]
            if peek(UInt8(ascii: "}")) {
                index += 1
                out.append(106)
                return true
            }
            let header = openList()
            var count = 0
            while true {
                guard peek(UInt8(ascii: "\"")) else { return false }
                out.append(104)
                out.append(2)
                guard string(), peek(UInt8(ascii: ":")) else { return false }
                index += 1
                guard value(depth: depth) else { return false }
                count += 1
                skipSpace()
                guard index < bytes.count else { return false }
                index += 1
                if bytes[index - 1] == UInt8(ascii: "}") {
                    closeList(at: header, count: count)
                    return true
                }
                guard bytes[index - 1] == UInt8(ascii: ",") else { return false }
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            if peek(UInt8(ascii: "]")) {
                index += 1
                out.append(106)
                return true
            }
            let header = openList()
            var count = 0
            var allSmall = true
            while true {
                var small = false
                guard value(depth: depth, small: &small) else { return false }
                allSmall = allSmall && small
                count += 1
                skipSpace()
                guard index < bytes.count else { return false }
                index += 1
                if bytes[index - 1] == UInt8(ascii: "]") { break }
                guard bytes[index - 1] == UInt8(ascii: ",") else { return false }
            }
            guard allSmall, count <= Int(UInt16.max) else {
                closeList(at: header, count: count)
                return true
            }
            // Erlang writes a list of integers 0…255 as a string: each element is `97 B`; keep the B's.
            let elements = header + 5
            out[header] = 107
            out[header + 1] = UInt8(count >> 8)
            out[header + 2] = UInt8(count & 0xFF)
            for i in 0..<count { out[header + 3 + i] = out[elements + 2 * i + 1] }
            out.removeSubrange((header + 3 + count)...)
            return true
        }

        /// A string literal starting at its opening quote, as a `BINARY_EXT` of its UTF-8 bytes, escapes decoded.
        mutating func string() -> Bool {
            index += 1
            out.append(109)
            let lengthAt = out.count
            for _ in 0..<4 { out.append(0) }
            let start = out.count
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    Self.patch(UInt32(truncatingIfNeeded: out.count - start), at: lengthAt, in: &out)
                    return true
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return false }
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
                        guard let scalar = unicodeEscape() else { return false }
                        Self.appendUTF8(scalar.value, to: &out)
                    default: return false
                    }
                case 0..<0x20: return false
                default: out.append(byte)
                }
            }
            return false
        }
        static func appendUTF8(_ value: UInt32, to out: inout [UInt8]) {
            switch value {
            case 0..<0x80: out.append(UInt8(value))
            case 0x80..<0x800: out += [0xC0 | UInt8(value >> 6), 0x80 | UInt8(value & 0x3F)]
            case 0x800..<0x10000:
                out += [0xE0 | UInt8(value >> 12), 0x80 | UInt8(value >> 6 & 0x3F), 0x80 | UInt8(value & 0x3F)]
            default:
                out += [
                    0xF0 | UInt8(value >> 18), 0x80 | UInt8(value >> 12 & 0x3F), 0x80 | UInt8(value >> 6 & 0x3F),
                    0x80 | UInt8(value & 0x3F),
                ]
            }
        }

        static func patch(_ value: UInt32, at offset: Int, in out: inout [UInt8]) {
            out[offset] = UInt8(value >> 24)
            out[offset + 1] = UInt8(value >> 16 & 0xFF)
            out[offset + 2] = UInt8(value >> 8 & 0xFF)
            out[offset + 3] = UInt8(value & 0xFF)
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
                guard let digit = RevID.hexValue(byte) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            index += 4
            return value
        }

        /// A number: an integer when the text has no fraction and no exponent, else a float.
        mutating func number(small: UnsafeMutablePointer<Bool>?) -> Bool {
            let start = index
            let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
            if negative { index += 1 }
            let digitsStart = index
            skipDigits()
            let digitsEnd = index
            guard digitsEnd > digitsStart, bytes[digitsStart] != UInt8(ascii: "0") || digitsEnd - digitsStart == 1
            else { return false }
            var isFloat = false
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isFloat = true
                index += 1
                guard skipDigits() > 0 else { return false }
            }
            if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                isFloat = true
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard skipDigits() > 0 else { return false }
            }
            if isFloat {
                guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite
                else { return false }
                ErlangTerm.float(value).encode(into: &out)
                return true
            }
            let digits = bytes[digitsStart..<digitsEnd]
            if digits.count <= 18 {  // fits an Int64 whatever the digits
                let magnitude = digits.reduce(0) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
                let value = negative ? -magnitude : magnitude
                small?.pointee = (0...255).contains(value)
                ErlangTerm.encodeInteger(Int(value), into: &out)
                return true
            }
            guard digits.count <= JiffyTerm.maxIntegerDigits else { return false }
            let magnitude = JiffyTerm.magnitude(decimal: digits)
            ErlangTerm.integer(negative: negative && !magnitude.isEmpty, magnitude: magnitude).encode(into: &out)
            return true
        }

        @discardableResult
        mutating func skipDigits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 { index += 1 }
            return index - start
        }
    }
}
