import CouchWire
import Foundation

/// CouchDB's view collation (`couch_ejson_compare`) as a byte string: two keys compare with `memcmp` on their
/// ``sortKey(_:)`` exactly as CouchDB orders them, so an SQLite index over the bytes (a BLOB column, compared
/// with `memcmp`) keeps rows in view order and answers key ranges without calling back into Swift.
///
/// Types order `null < false < true < numbers < strings < arrays < objects`; numbers by value (`1` equals
/// `1.0`; as doubles, so integers beyond 2^53 may tie); arrays element by element, a prefix first; objects
/// member by member (key, then value) in the order given, fewer members first.
///
/// Strings follow ICU's root collation (CouchDB's), approximated in three levels the way ICU builds its own
/// sort keys: first the letters ignoring accents and case (`"a" < "B"`, `"A" < "aa"`), then accents
/// (`"e" < "é"`), then case, lowercase first (`"a" < "A"`). ASCII punctuation and digits come before letters in
/// ICU's order (`_ - , ; : ! ? . ' " ( ) [ ] { } @ * / \ & # % ` ^ + < = > | ~ $ 0…9`, after the whitespace);
/// control characters are ignored. Other characters are decomposed (NFD): combining marks weigh on the second
/// level, the rest sort by their lowercase code point after every ASCII letter, which keeps scripts apart in
/// ICU's order (Latin < Greek < Cyrillic < … < kana < Han) but not ICU's order inside a non-Latin script.
/// `conformance/test_views_collation.py` checks the ASCII table and the cross-type order against CouchDB.
public enum ViewCollation {
    /// The sort key of `value`: compare two with `memcmp` (shorter first on a common prefix).
    public static func sortKey(_ value: JSON) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        append(value, to: &out)
        return out
    }

    /// -1, 0 or 1 as `lhs` sorts before, with, or after `rhs` in view order.
    public static func compare(_ lhs: JSON, _ rhs: JSON) -> Int {
        let (left, right) = (sortKey(lhs), sortKey(rhs))
        if left == right { return 0 }
        return left.lexicographicallyPrecedes(right) ? -1 : 1
    }

    // Type tags: every encoded value starts with one, and none is 0, the terminator of arrays and objects.
    private static let nullTag: UInt8 = 1
    private static let falseTag: UInt8 = 2
    private static let trueTag: UInt8 = 3
    private static let numberTag: UInt8 = 4
    private static let stringTag: UInt8 = 5
    private static let arrayTag: UInt8 = 6
    private static let objectTag: UInt8 = 7

    private static func append(_ value: JSON, to out: inout [UInt8]) {
        // Iterative: a deeply nested key must not exhaust a connection thread's small stack.
        enum Step {
            case value(JSON)
            case string(String)
            case end
        }
        var pending: [Step] = [.value(value)]
        while let step = pending.popLast() {
            switch step {
            case .end:
                out.append(0)
            case .string(let text):
                appendString(text, to: &out)
            case .value(.null):
                out.append(nullTag)
            case .value(.bool(let flag)):
                out.append(flag ? trueTag : falseTag)
            case .value(.number(let number)):
                out.append(numberTag)
                appendNumber(number.doubleValue ?? (number.text.hasPrefix("-") ? -.infinity : .infinity), to: &out)
            case .value(.string(let text)):
                appendString(text, to: &out)
            case .value(.array(let elements)):
                out.append(arrayTag)
                pending.append(.end)
                for element in elements.reversed() { pending.append(.value(element)) }
            case .value(.object(let members)):
                out.append(objectTag)
                pending.append(.end)
                for member in members.reversed() {
                    pending.append(.value(member.value))
                    pending.append(.string(member.key))
                }
            }
        }
    }

    /// A double as 8 bytes whose unsigned order is numeric order (sign bit flipped for positives, all bits for
    /// negatives); `-0` is `0`.
    private static func appendNumber(_ value: Double, to out: inout [UInt8]) {
        let bits = (value == 0 ? 0 : value).bitPattern
        let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ordered >> shift)) }
    }

    /// One collation element: a primary weight (0 for a combining mark, which has only a secondary one), a
    /// secondary and a tertiary weight.
    private struct Element {
        var primary: UInt32
        var secondary: UInt32
        var tertiary: UInt8
    }

    /// `stringTag`, then each level's weights and a 0 byte: primaries (3 bytes each, the first never 0),
    /// secondaries (3 bytes), tertiaries (1 byte, never 0).
    private static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(stringTag)
        let elements = collationElements(text)
        for element in elements where element.primary != 0 { appendWeight(element.primary, to: &out) }
        out.append(0)
        for element in elements { appendWeight(element.secondary, to: &out) }
        out.append(0)
        for element in elements where element.primary != 0 { out.append(element.tertiary) }
        out.append(0)
    }

    private static func appendWeight(_ weight: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: weight >> 16))
        out.append(UInt8(truncatingIfNeeded: weight >> 8))
        out.append(UInt8(truncatingIfNeeded: weight))
    }

    /// Weights start at 0x01_0000 so that a weight's first byte is never 0.
    private static let weightBase: UInt32 = 0x01_0000
    /// The secondary weight of a base character; combining marks weigh more.
    private static let commonSecondary: UInt32 = weightBase
    /// Primaries of spaces, punctuation and symbols outside ASCII: after ASCII's, before the digits.
    private static let otherSymbolBase: UInt32 = 0x02_0000
    /// Primaries of the ASCII digits, then the letters.
    private static let alphanumericBase: UInt32 = 0x14_0000
    /// Primaries of every other character outside ASCII: after the ASCII letters.
    private static let otherBase: UInt32 = 0x15_0000

    private static func collationElements(_ text: String) -> [Element] {
        var elements: [Element] = []
        elements.reserveCapacity(text.utf8.count)
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            for byte in text.utf8 { appendASCII(byte, to: &elements) }
            return elements
        }
        for scalar in text.decomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar.value < 0x80 {
                appendASCII(UInt8(scalar.value), to: &elements)
                continue
            }
            let properties = scalar.properties
            switch properties.generalCategory {
            case .nonspacingMark, .spacingMark, .enclosingMark:
                elements.append(Element(primary: 0, secondary: commonSecondary + 1 + scalar.value, tertiary: 1))
                continue
            case .format, .control:
                continue  // ignorable, like ICU's zero-width and control characters
            case .spaceSeparator, .lineSeparator, .paragraphSeparator, .connectorPunctuation, .dashPunctuation,
                .openPunctuation, .closePunctuation, .initialPunctuation, .finalPunctuation, .otherPunctuation,
                .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
                elements.append(
                    Element(primary: otherSymbolBase + scalar.value, secondary: commonSecondary, tertiary: 1))
                continue
            default:
                break
            }
            if let expansion = expansions[scalar.value] {
                // Ligatures sort as their letters with a tertiary difference (ß after "ss", æ among "ae…"); letters
                // with a stroke (ø, đ, ł) as their base letter with a secondary one, as in ICU's root order.
                for (letter, secondary, tertiary) in expansion {
                    elements.append(
                        Element(
                            primary: asciiPrimary[Int(letter)], secondary: commonSecondary + secondary,
                            tertiary: tertiary))
                }
                continue
            }
            let lower = properties.lowercaseMapping.unicodeScalars
            let base = lower.count == 1 ? lower.first?.value ?? scalar.value : scalar.value
            let tertiary: UInt8 = base != scalar.value && properties.isUppercase ? 2 : 1
            elements.append(Element(primary: otherBase + base, secondary: commonSecondary, tertiary: tertiary))
        }
        return elements
    }

    /// Characters that are not decomposable but that ICU sorts with ASCII letters: (letter, extra secondary weight,
    /// tertiary weight) each.
    private static let expansions: [UInt32: [(UInt8, UInt32, UInt8)]] = [
        0xDF: [(UInt8(ascii: "s"), 0, 3), (UInt8(ascii: "s"), 0, 3)],  // ß
        0xE6: [(UInt8(ascii: "a"), 0, 3), (UInt8(ascii: "e"), 0, 3)],  // æ
        0xC6: [(UInt8(ascii: "a"), 0, 4), (UInt8(ascii: "e"), 0, 4)],  // Æ
        0x153: [(UInt8(ascii: "o"), 0, 3), (UInt8(ascii: "e"), 0, 3)],  // œ
        0x152: [(UInt8(ascii: "o"), 0, 4), (UInt8(ascii: "e"), 0, 4)],  // Œ
        0xF8: [(UInt8(ascii: "o"), 0x20_0000, 1)],  // ø
        0xD8: [(UInt8(ascii: "o"), 0x20_0000, 2)],  // Ø
        0x111: [(UInt8(ascii: "d"), 0x20_0000, 1)],  // đ
        0x110: [(UInt8(ascii: "d"), 0x20_0000, 2)],  // Đ
        0x142: [(UInt8(ascii: "l"), 0x20_0000, 1)],  // ł
        0x141: [(UInt8(ascii: "l"), 0x20_0000, 2)],  // Ł
    ]

    private static func appendASCII(_ byte: UInt8, to elements: inout [Element]) {
        let primary = asciiPrimary[Int(byte)]
        guard primary != 0 else { return }  // control characters are ignorable
        let upper = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")
        elements.append(Element(primary: primary, secondary: commonSecondary, tertiary: upper ? 2 : 1))
    }

    /// ICU root primary order of the ASCII characters that have one, as CouchDB 3.4.3 sorts them; a letter's
    /// capital shares its primary (case is the third level).
    private static let asciiOrder: [UInt8] = Array("\t\n\u{0B}\u{0C}\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$".utf8)

    private static let asciiPrimary: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 128)
        var next = weightBase
        for byte in asciiOrder {
            table[Int(byte)] = next
            next += 1
        }
        next = alphanumericBase
        for digit in UInt8(ascii: "0")...UInt8(ascii: "9") {
            table[Int(digit)] = next
            next += 1
        }
        for letter in UInt8(ascii: "a")...UInt8(ascii: "z") {
            table[Int(letter)] = next
            table[Int(letter - 32)] = next
            next += 1
        }
        return table
    }()
}
