import RevTreeTestSupport
import Testing

@testable import RevTree

/// CouchDB's rev ids are binaries: 32 hex digits become 16 raw bytes (`couch_doc:parse_revid`), everything else
/// stays text, and a 16-byte binary is written back as hex (`revid_to_str`). Winners and `_conflicts` follow
/// Erlang's order of those binaries.
@Suite struct RevOrderTests {
    static let ff = String(repeating: "f", count: 32)

    @Test func upperCaseHexIsLowerCasedOnTheWayIn() throws {
        let upper = try RevID(parsing: "1-ABCDEF0123456789ABCDEF0123456789")
        #expect(upper.hash == "abcdef0123456789abcdef0123456789")
        #expect(upper == (try RevID(parsing: "1-abcdef0123456789ABCDEF0123456789")))
        let path = try RevID.path(
            start: 2, ids: ["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "B0000000000000000000000000000000"])
        #expect(
            path.map(\.description) == [
                "2-" + String(repeating: "a", count: 32), "1-b" + String(repeating: "0", count: 31),
            ])
    }

    @Test func thirtyTwoCharactersMustBeHex() throws {
        let notHex = "1-" + String(repeating: "g", count: 32)
        #expect(throws: RevTreeError.invalidRevFormat) { try RevID(parsing: notHex) }
        #expect(throws: RevTreeError.invalidHexRevID) {
            try RevID.path(start: 1, ids: [String(repeating: "z", count: 32)])
        }
        // 31 and 33 characters are opaque text.
        #expect(try RevID(parsing: "1-" + String(repeating: "g", count: 31)).hash.count == 31)
        #expect(try RevID(parsing: "1-" + String(repeating: "g", count: 33)).hash.count == 33)
    }

    @Test func sixteenByteTextIsWrittenAsTheHexOfItsBytes() throws {
        let rev = try RevID(parsing: "1-abcdefghijklmnop")
        #expect(rev.description == "1-6162636465666768696a6b6c6d6e6f70")
        #expect(try RevID.path(start: 1, ids: ["abcdefghijklmnop"]) == [rev])
        // Multi-byte UTF-8 counts in bytes, as Erlang's size/1 does: 8 × "é" is 16 bytes.
        #expect(try RevID(parsing: "1-" + String(repeating: "é", count: 8)).hash == String(repeating: "c3a9", count: 8))
    }

    @Test func hexHashesCompareAsBytesAgainstText() throws {
        // As strings "fff…" < "zz"; as CouchDB's binaries 0xff… > "zz" (0x7a 0x7a).
        #expect(r("1-zz") < r("1-\(RevOrderTests.ff)"))
        // 0x61 0x62 0x00 … against "ab": the text is a prefix, so it comes first; against "abc", 0x00 < "c".
        let ab00 = "1-6162" + String(repeating: "0", count: 28)
        #expect(r("1-ab") < r(ab00))
        #expect(r(ab00) < r("1-abc"))
        // 0x61 … against "b": below.
        #expect(r("1-61" + String(repeating: "f", count: 30)) < r("1-b"))
    }

    @Test func unnormalizedUpperCaseHexStillOrdersAsBytes() {
        let upper = RevID(pos: 1, hash: String(repeating: "F", count: 32))
        #expect(RevID(pos: 1, hash: "zz") < upper)
        #expect(RevID(pos: 1, hash: String(repeating: "e", count: 32)) < upper)
        #expect(!(upper < RevID(pos: 1, hash: RevOrderTests.ff)) && !(RevID(pos: 1, hash: RevOrderTests.ff) < upper))
    }

    @Test func textHashesCompareBytewiseWithPrefixesFirst() {
        #expect(r("1-a") < r("1-aa"))
        #expect(r("1-B") < r("1-a"))  // 0x42 < 0x61
        #expect(r("1-zz") < r("1-é"))  // 0xc3 above ASCII
        #expect(r("9-zzz") < r("10-a"))  // generation first
    }

    @Test func orderIsTotalAndMatchesAReferenceOnMixedIDs() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("0123456789abcdefABCDEFxyz-é")
        var hashes: [String] = []
        for _ in 0..<300 {
            let length = [1, 2, 15, 16, 31, 32, 32, 32, 33].randomElement(using: &generator) ?? 32
            let hexOnly = Bool.random(using: &generator)
            let pool = hexOnly ? Array(alphabet[0..<22]) : alphabet
            hashes.append(String((0..<length).map { _ in pool.randomElement(using: &generator) ?? "a" }))
        }
        let revs = hashes.map { RevID(pos: 1, hash: $0) }
        for a in revs {
            for b in revs.prefix(60) {
                let expected = RevOrderTests.referenceKey(a.hash).lexicographicallyPrecedes(
                    RevOrderTests.referenceKey(b.hash))
                #expect((a < b) == expected, "\(a) < \(b)")
                #expect(!(a < b && b < a))
            }
        }
    }

    @Test func winnerAndConflictsFollowTheBinaryOrder() throws {
        var tree = RevTree()
        let upperHex = "2-" + String(repeating: "A", count: 32)
        for leaf in ["2-zz", "2-\(RevOrderTests.ff)", upperHex, "2-b"] {
            try tree.merge(
                path: [try RevID(parsing: leaf), r("1-" + String(repeating: "1", count: 32))], deleted: false)
        }
        // 0xff… > 0xaa… > "zz" > "b"; by string the winner would have been "zz".
        #expect(tree.winner?.rev.description == "2-" + RevOrderTests.ff)
        #expect(tree.conflicts.map(\.description) == ["2-" + String(repeating: "a", count: 32), "2-zz", "2-b"])
    }

    /// CouchDB's binary for a hash, computed the obvious way.
    static func referenceKey(_ hash: String) -> [UInt8] {
        let bytes = Array(hash.utf8)
        guard bytes.count == 32, let value = hexBytes(hash) else { return bytes }
        return value
    }

    /// Only `[0-9a-fA-F]` pairs: `UInt8("-0", radix: 16)` is 0, so the integer parser alone is too lenient.
    static func hexBytes(_ hash: String) -> [UInt8]? {
        let digits = Array(hash.utf8)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        for pair in stride(from: 0, to: digits.count - 1, by: 2) {
            guard let high = nibble(digits[pair]), let low = nibble(digits[pair + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    @Test func aSignIsNotAHexDigit() {
        // "-0" parses as an integer, but a rev id with a "-" in its 32 characters is text, not a binary.
        let signed = "-0" + String(repeating: "0", count: 30)
        #expect(RevOrderTests.hexBytes(signed) == nil)
        #expect(RevID(pos: 1, hash: signed) < RevID(pos: 1, hash: "0"))  // "-" (0x2d) < "0" (0x30)
    }
}
