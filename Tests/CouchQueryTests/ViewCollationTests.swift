import CouchWire
import Testing

@testable import CouchQuery

private func j(_ text: String) throws -> JSON { try JSON.parse(text) }

@Suite struct ViewCollationTests {
    /// CouchDB's own collation list (`test/elixir/test/view_collation_test.exs`), in order.
    @Test func crossTypeOrderIsCouchDBs() throws {
        let ordered = [
            "null", "false", "true", "1", "2", "3.0", "4", #""a""#, #""A""#, #""aa""#, #""b""#, #""B""#, #""ba""#,
            #""bb""#, #"["a"]"#, #"["b"]"#, #"["b","c"]"#, #"["b","c","a"]"#, #"["b","d"]"#, #"["b","d","e"]"#,
            #"{"a":1}"#, #"{"a":2}"#, #"{"b":1}"#, #"{"b":2}"#, #"{"b":2,"a":1}"#, #"{"b":2,"c":2}"#,
        ]
        let values = try ordered.map(j)
        for (i, a) in values.enumerated() {
            for (k, b) in values.enumerated() {
                #expect(ViewCollation.compare(a, b) == (i < k ? -1 : i == k ? 0 : 1), "\(ordered[i]) vs \(ordered[k])")
            }
        }
    }

    /// The ASCII order CouchDB 3.4.3 gave for one-character keys (recorded from a live server).
    @Test func asciiOrderMatchesCouchDB() {
        let order = Array(
            "\t\n\u{0B}\u{0C}\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"
        )
        for (i, c) in order.enumerated().dropLast() {
            let next = order[i + 1]
            #expect(
                ViewCollation.compare(.string(String(c)), .string(String(next))) == -1,
                "\(c.unicodeScalars.first!.value) < \(next.unicodeScalars.first!.value)")
        }
    }

    /// Multi-level comparison as ICU's: letters first, then accents, then case; controls ignored.
    @Test func stringLevelsMatchCouchDB() {
        // Recorded from CouchDB 3.4.3: each sorts strictly before the next.
        let ordered = [
            "a", "A", "ä", "a b", "a-b", "ab", "aB", "Ab", "AB", "ab-", "æ", "b", "e", "E", "é", "É", "ss", "ß", "z",
            "ω", "Ω", "ア", "日",
        ]
        for (a, b) in zip(ordered, ordered.dropFirst()) {
            #expect(ViewCollation.compare(.string(a), .string(b)) == -1, "\(a) < \(b)")
        }
        // Control characters are ignorable: "a\u{1}b" collates with "ab".
        #expect(ViewCollation.compare(.string("a\u{1}b"), .string("ab")) == 0)
        #expect(ViewCollation.compare(.string("\u{7F}"), .string("")) == 0)
        // Precomposed and decomposed forms are the same string to ICU.
        #expect(ViewCollation.compare(.string("\u{E9}"), .string("e\u{301}")) == 0)
    }

    @Test func numbersCompareByValue() throws {
        #expect(ViewCollation.compare(try j("1"), try j("1.0")) == 0)
        #expect(ViewCollation.compare(try j("-0"), try j("0")) == 0)
        #expect(ViewCollation.compare(try j("-2"), try j("-1.5")) == -1)
        #expect(ViewCollation.compare(try j("-1e300"), try j("-1")) == -1)
        #expect(ViewCollation.compare(try j("1e999"), try j("1e300")) == 1)  // overflow orders as infinity
        #expect(ViewCollation.compare(try j("10"), try j("9")) == 1)
        #expect(ViewCollation.compare(try j("0.1"), try j("0.01")) == 1)
    }

    @Test func prefixesSortFirstInsideContainers() throws {
        // A string that is a prefix of another, inside arrays: the terminators keep element boundaries.
        #expect(ViewCollation.compare(try j(#"["a","b"]"#), try j(#"["ab"]"#)) == -1)
        #expect(ViewCollation.compare(try j(#"[[]]"#), try j(#"[null]"#)) == 1)
        #expect(ViewCollation.compare(try j(#"[]"#), try j(#"[null]"#)) == -1)
        #expect(ViewCollation.compare(try j(#"{}"#), try j(#"{"a":null}"#)) == -1)
        #expect(ViewCollation.compare(try j(#"{"a":1}"#), try j(#"{"a":1,"b":0}"#)) == -1)
        #expect(ViewCollation.compare(try j(#"["",1]"#), try j(#"[1]"#)) == 1)
    }

    @Test func deeplyNestedKeysDoNotExhaustTheStack() throws {
        let depth = 500
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let key = ViewCollation.sortKey(try j(text))
        #expect(key.count == depth * 2)
    }
}
