/// The Erlang terms CouchDB hashes into a revision id, and their external term format.
///
/// CouchDB 3.4.3 computes a new revision as `md5(term_to_binary(Term, [{minor_version, 1}]))` (see
/// `RevisionHash`). Only the term types a document can produce are modelled: atoms (`true`, `false`, `null`),
/// integers of any size, floats, binaries (strings), tuples and lists. `externalFormat` writes exactly the bytes
/// `term_to_binary/2` writes for them with that option on OTP 25, the release CouchDB 3.4.3 runs on:
///
/// | term | tag |
/// |------|-----|
/// | atom (latin-1 name) | `ATOM_EXT` 100, u16 length |
/// | integer 0…255 | `SMALL_INTEGER_EXT` 97, u8 |
/// | other integer in i32 | `INTEGER_EXT` 98, i32 |
/// | larger integer | `SMALL_BIG_EXT` 110 (≤ 255 digit bytes) or `LARGE_BIG_EXT` 111, sign, little-endian bytes |
/// | float | `NEW_FLOAT_EXT` 70, IEEE 754 big-endian (minor version 1) |
/// | binary | `BINARY_EXT` 109, u32 length |
/// | tuple | `SMALL_TUPLE_EXT` 104 (arity ≤ 255) or `LARGE_TUPLE_EXT` 105 |
/// | `[]` | `NIL_EXT` 106 |
/// | list of integers 0…255, at most 65,535 | `STRING_EXT` 107, u16 length, the bytes |
/// | other list | `LIST_EXT` 108, u32 length, elements, `NIL_EXT` |
///
/// All integers in the format are big-endian.
public indirect enum ErlangTerm: Sendable, Equatable {
    /// An atom whose name is ASCII (CouchDB's are `true`, `false`, `null`).
    case atom(String)
    /// An integer as sign and magnitude, the magnitude little-endian bytes without trailing zero bytes (zero is
    /// `[]`; a negative zero is normalised to zero when encoded).
    case integer(negative: Bool, magnitude: [UInt8])
    case float(Double)
    case binary([UInt8])
    case tuple([ErlangTerm])
    case list([ErlangTerm])

    /// An integer term from a machine integer.
    public static func int(_ value: Int) -> ErlangTerm {
        var rest = value.magnitude
        var bytes: [UInt8] = []
        while rest != 0 {
            bytes.append(UInt8(truncatingIfNeeded: rest))
            rest >>= 8
        }
        return .integer(negative: value < 0, magnitude: bytes)
    }

    /// `true` or `false`.
    public static func bool(_ value: Bool) -> ErlangTerm { .atom(value ? "true" : "false") }

    /// `term_to_binary(Term, [{minor_version, 1}])`: the version byte 131, then the term.
    public var externalFormat: [UInt8] {
        var out: [UInt8] = [131]
        encode(into: &out)
        return out
    }

    /// Appends the term's encoding (without the version byte).
    public func encode(into out: inout [UInt8]) {
        switch self {
        case .atom(let name):
            let bytes = Array(name.utf8)
            out.append(100)
            Self.append(UInt16(truncatingIfNeeded: bytes.count), to: &out)
            out += bytes
        case .integer(let negative, let magnitude):
            Self.encodeInteger(negative: negative, magnitude: magnitude, into: &out)
        case .float(let value):
            out.append(70)
            Self.append(value.bitPattern, to: &out)
        case .binary(let bytes):
            out.append(109)
            Self.append(UInt32(truncatingIfNeeded: bytes.count), to: &out)
            out += bytes
        case .tuple(let elements):
            if elements.count <= 255 {
                out += [104, UInt8(elements.count)]
            } else {
                out.append(105)
                Self.append(UInt32(truncatingIfNeeded: elements.count), to: &out)
            }
            for element in elements { element.encode(into: &out) }
        case .list(let elements):
            Self.encodeList(elements, into: &out)
        }
    }

    /// The byte of an integer 0…255, which Erlang lists of only such integers pack as a string.
    var smallIntegerByte: UInt8? {
        guard case .integer(let negative, let magnitude) = self, magnitude.count <= 1 else { return nil }
        let byte = magnitude.first ?? 0
        return negative && byte != 0 ? nil : byte
    }

    private static func encodeList(_ elements: [ErlangTerm], into out: inout [UInt8]) {
        if elements.isEmpty {
            out.append(106)
            return
        }
        if elements.count <= Int(UInt16.max) {
            let bytes = elements.compactMap(\.smallIntegerByte)
            if bytes.count == elements.count {
                out.append(107)
                append(UInt16(bytes.count), to: &out)
                out += bytes
                return
            }
        }
        out.append(108)
        append(UInt32(truncatingIfNeeded: elements.count), to: &out)
        for element in elements { element.encode(into: &out) }
        out.append(106)
    }

    /// Appends an integer that fits a machine word, without building its magnitude when it fits 32 bits.
    static func encodeInteger(_ value: Int, into out: inout [UInt8]) {
        if (0...255).contains(value) {
            out.append(97)
            out.append(UInt8(value))
        } else if let fits = Int32(exactly: value) {
            out.append(98)
            append(UInt32(bitPattern: fits), to: &out)
        } else {
            int(value).encode(into: &out)
        }
    }

    private static func encodeInteger(negative: Bool, magnitude: [UInt8], into out: inout [UInt8]) {
        var digits = magnitude
        while digits.last == 0 { digits.removeLast() }
        if digits.count <= 4 {
            var value: Int64 = 0
            for byte in digits.reversed() { value = value << 8 | Int64(byte) }
            if negative { value = -value }
            if (0...255).contains(value) {
                out += [97, UInt8(value)]
                return
            }
            if let fits = Int32(exactly: value) {
                out.append(98)
                append(UInt32(bitPattern: fits), to: &out)
                return
            }
        }
        if digits.count <= 255 {
            out += [110, UInt8(digits.count)]
        } else {
            out.append(111)
            append(UInt32(truncatingIfNeeded: digits.count), to: &out)
        }
        out.append(negative ? 1 : 0)
        out += digits
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { out += $0 }
    }
}
