import CouchWire
import Foundation
import Synchronization
import Testing

/// Parses `text`, returning the error (or nil on success).
private func parseError(_ bytes: [UInt8], maxDepth: Int = JSON.defaultMaxDepth) -> JSONError? {
    do {
        _ = try JSON.parse(bytes, maxDepth: maxDepth)
        return nil
    } catch {
        return error
    }
}

private func parseError(_ text: String) -> JSONError? { parseError(Array(text.utf8)) }

@Suite struct JSONRoundTripTests {
    @Test(arguments: [
        #"{"b":1,"a":2,"c":{"z":[],"y":{}}}"#,
        #"[1.0e10,12345678901234567890,-0,1E-7,0.5,-12.25e+3]"#,
        #"{"_id":"doc","_rev":"1-abc","_revisions":{"start":1,"ids":["abc"]}}"#,
        #""café ☕ 𝄞""#,
        #"[true,false,null,"",[[[]]]]"#,
        #""a/b""#,
        "123",
        "-0.0e-0",
    ])
    func roundTripIsByteExact(text: String) throws {
        let json = try JSON.parse(text)
        #expect(json.serializedString == text)
    }

    @Test func numbersKeepTheirText() throws {
        let json = try JSON.parse("[1.0e10, 12345678901234567890, -0, 1E-7]")
        let texts = json.arrayValue?.compactMap { $0.numberValue?.text }
        #expect(texts == ["1.0e10", "12345678901234567890", "-0", "1E-7"])
        #expect(json[0]?.numberValue?.doubleValue == 1.0e10)
        #expect(json[1]?.intValue == nil)  // does not fit Int
        #expect(json[2]?.intValue == 0)
        #expect(json[3]?.numberValue?.doubleValue == 1e-7)
    }

    @Test func whitespaceIsDroppedAndOrderKept() throws {
        let json = try JSON.parse(" {\n\t\"z\" : 1 ,\r\n \"a\" : [ 1 , 2 ] } \n")
        #expect(json.serializedString == #"{"z":1,"a":[1,2]}"#)
        #expect(json.objectValue?.keys == ["z", "a"])
    }

    /// As jiffy's `dedupe_keys` in CouchDB 3.4.3 (`PUT {"a":1,"b":2,"a":3}` reads back `{"b":2,"a":3}`).
    @Test func duplicateKeysTakeTheirLastPositionAndValue() throws {
        let json = try JSON.parse(#"{"a":1,"b":2,"a":3}"#)
        #expect(json.serializedString == #"{"b":2,"a":3}"#)
        // The same with an object large enough to use the key index.
        var text = "{"
        for k in 0..<40 { text += "\"k\(k)\":\(k)," }
        text += #""k5":"last"}"#
        let big = try JSON.parse(text)
        #expect(big.objectValue?.count == 40)
        #expect(big["k5"] == "last")
        #expect(big.objectValue?.keys[39] == "k5")
        #expect(big.objectValue?.keys[5] == "k6")
    }

    @Test func escapesDecodeAndSurrogatePairsCombine() throws {
        let json = try JSON.parse(#""\"\\\/\b\f\n\r\t\u0041\u00E9\u20AC\uD834\uDD1E""#)
        #expect(json.stringValue == "\"\\/\u{8}\u{C}\n\r\tAé€𝄞")
    }

    @Test func serializerEscapesLikeJiffy() {
        let json: JSON = ["s": .string("q\" b\\ /\u{8}\u{C}\n\r\t\u{1}\u{1F}\u{7F}é€𝄞")]
        #expect(json.serializedString == #"{"s":"q\" b\\ /\b\f\n\r\t\u0001\u001F"# + "\u{7F}é€𝄞\"}")
    }

    @Test func appendQuotedWritesALiteral() {
        var buffer = Array("x=".utf8)
        JSON.appendQuoted("a\"b", to: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"x="a\"b""#)
    }

    @Test func literalsBuildOrderedValues() {
        let json: JSON = ["z": 1, "a": [true, .null, 2.5, "s"], "m": ["x": -3]]
        #expect(json.serializedString == #"{"z":1,"a":[true,null,2.5,"s"],"m":{"x":-3}}"#)
        #expect(json["m"]?["x"]?.intValue == -3)
        #expect(json["a"]?[1]?.isNull == true)
        #expect(json["a"]?[9] == nil)
        #expect(json["a"]?[-1] == nil)
        #expect(json["nope"] == nil)
        #expect(json[0] == nil)
        #expect(JSON.double(.nan) == .null)
        #expect(JSON.double(1e-7).serializedString == "1e-07")
        #expect(JSON.int(7).serializedString == "7")
    }

    @Test func parsingEveryEntryPointAgrees() throws {
        let text = #"{"a":[1,"x"]}"#
        let bytes = Array(text.utf8)
        let fromString = try JSON.parse(text)
        #expect(try JSON.parse(bytes) == fromString)
        #expect(try JSON.parse(([0x20] + bytes + [0x20])[1...]) == fromString)
        let fromPointer = try bytes.withUnsafeBytes { buffer throws(JSONError) in try JSON.parse(buffer) }
        #expect(fromPointer == fromString)
        #expect(fromString.serialized() == bytes)
    }
}

@Suite struct JSONNumberTests {
    @Test(arguments: [
        "0", "-0", "1", "-1", "10", "1.5", "0.0", "1e5", "1E+5", "1e-5", "-0.0e0", "123456789012345678901234",
    ])
    func validNumbersAreAccepted(text: String) {
        #expect(JSONNumber(text)?.text == text)
    }

    @Test(arguments: [
        "", "-", "+1", ".5", "1.", "01", "-01", "1e", "1e+", "NaN", "Infinity", "-Infinity", " 1", "1 ", "0x1", "1.e5",
        "--1", "1e5.0",
    ])
    func invalidNumbersAreRejected(text: String) {
        #expect(JSONNumber(text) == nil)
    }

    @Test func intAndDoubleValues() {
        #expect(JSONNumber("5")?.intValue == 5)
        #expect(JSONNumber("-3")?.intValue == -3)
        #expect(JSONNumber("5.0")?.intValue == nil)
        #expect(JSONNumber("9223372036854775808")?.intValue == nil)
        #expect(JSONNumber("1e999")?.doubleValue == nil)
        #expect(JSONNumber("2.5")?.doubleValue == 2.5)
        #expect(JSONNumber(42).text == "42")
    }
}

@Suite struct JSONObjectTests {
    @Test func subscriptReplacesInPlaceAppendsAndRemoves() {
        var object = JSONObject([("a", 1), ("b", 2)])
        object["a"] = 10
        object["c"] = 3
        #expect(JSON.object(object).serializedString == #"{"a":10,"b":2,"c":3}"#)
        object["b"] = nil
        #expect(object.keys == ["a", "c"])
        #expect(object.removeValue(forKey: "a") == 10)
        #expect(object.removeValue(forKey: "a") == nil)
        #expect(object.contains(key: "c"))
        #expect(!object.contains(key: "a"))
    }

    @Test func largeObjectsStayConsistentThroughEdits() {
        var object = JSONObject()
        for k in 0..<50 { object["k\(k)"] = .int(k) }
        for k in stride(from: 0, to: 50, by: 3) { object["k\(k)"] = nil }
        object["k1"] = "one"
        #expect(object.count == 33)
        #expect(object["k1"] == "one")
        #expect(object["k3"] == nil)
        #expect(object["k49"] == 49)
        #expect(object.keys.first == "k1")
        for k in 0..<50 where k % 3 != 0 { object["k\(k)"] = nil }
        #expect(object.isEmpty)
        object["again"] = true
        #expect(object.keys == ["again"])
    }

    @Test func equalityIsOrderSensitive() throws {
        #expect(try JSON.parse(#"{"a":1,"b":2}"#) != JSON.parse(#"{"b":2,"a":1}"#))
        #expect(try JSON.parse(#"{"a":1,"b":2}"#) == JSON.parse(#"{ "a" : 1 , "b" : 2 }"#))
        #expect(try JSON.parse("[1,[2,3]]") != JSON.parse("[1,[2]]"))
        #expect(try JSON.parse(#"[{"a":[null]}]"#) != JSON.parse(#"[{"a":[false]}]"#))
        #expect(try JSON.parse(#"{"a":1}"#) != JSON.parse(#"{"b":1}"#))
        #expect(JSON.number(JSONNumber(1)) != JSON.string("1"))
        #expect(try JSON.parse("1.0") != JSON.parse("1"))  // numbers compare by text
    }
}

@Suite struct JSONRejectionTests {
    @Test(arguments: [
        // (input, kind, offset)
        ("", JSONError.Kind.unexpectedEnd, 0),
        ("   ", .unexpectedEnd, 3),
        ("[1,2", .unexpectedEnd, 4),
        (#"{"a""#, .unexpectedEnd, 4),
        (#""abc"#, .unexpectedEnd, 4),
        ("tru", .unexpectedEnd, 3),
        ("[1] x", .trailingData, 4),
        ("1 2", .trailingData, 2),
        ("{}{}", .trailingData, 2),
        ("[1,]", .unexpectedCharacter, 3),
        ("[,1]", .unexpectedCharacter, 1),
        (#"{"a":1,}"#, .unexpectedCharacter, 7),
        (#"{"a" 1}"#, .unexpectedCharacter, 5),
        ("{a:1}", .unexpectedCharacter, 1),
        ("['a']", .unexpectedCharacter, 1),
        ("[1 2]", .unexpectedCharacter, 3),
        ("NaN", .unexpectedCharacter, 0),
        ("Infinity", .unexpectedCharacter, 0),
        ("-Infinity", .invalidNumber, 1),
        ("nul", .unexpectedEnd, 3),
        ("nulL", .unexpectedCharacter, 3),
        ("01", .invalidNumber, 1),
        ("-01", .invalidNumber, 2),
        ("+1", .unexpectedCharacter, 0),
        (".5", .unexpectedCharacter, 0),
        ("1.", .invalidNumber, 2),
        ("[1.]", .invalidNumber, 3),
        ("1e", .invalidNumber, 2),
        ("1e+", .invalidNumber, 3),
        ("-", .invalidNumber, 1),
        (#""\x""#, .invalidEscape, 1),
        (#""\u12G4""#, .invalidEscape, 1),
        (#""\U0041""#, .invalidEscape, 1),
        (#""\uD800""#, .loneSurrogate, 1),
        (#""\uDC00""#, .loneSurrogate, 1),
        (#""a\uD800\u0041""#, .loneSurrogate, 2),
        (#""\uD800\n""#, .loneSurrogate, 1),
        (#""\uD800\uD800""#, .loneSurrogate, 1),
        ("\"a\tb\"", .controlCharacterInString, 2),
        ("\"a\nb\"", .controlCharacterInString, 2),
        ("\"\u{0}\"", .controlCharacterInString, 1),
        ("\"\\n\u{1F}\"", .controlCharacterInString, 3),
        ("\u{FEFF}{}", .byteOrderMark, 0),
    ])
    func invalidTextIsRejectedWithKindAndOffset(input: String, kind: JSONError.Kind, offset: Int) {
        #expect(parseError(input) == JSONError(kind, at: offset), "input: \(input)")
    }

    @Test(arguments: [
        ([0x22, 0xC3, 0x22] as [UInt8], 1),  // truncated two-byte sequence
        ([0x22, 0x61, 0xFF, 0x22], 2),  // never valid
        ([0x22, 0xC0, 0xAF, 0x22], 1),  // overlong "/"
        ([0x22, 0xE0, 0x80, 0xAF, 0x22], 1),  // overlong three-byte
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // UTF-8-encoded surrogate U+D800
        ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
        ([0x22, 0x5C, 0x6E, 0x80, 0x22], 3),  // lone continuation after an escape (slow path)
        ([0x22, 0xE2, 0x82, 0x22], 1),  // truncated three-byte before the quote
    ])
    func invalidUTF8InStringsIsRejected(bytes: [UInt8], offset: Int) {
        #expect(parseError(bytes) == JSONError(.invalidUTF8, at: offset))
    }

    @Test func nonASCIIOutsideStringsIsRejected() {
        #expect(parseError([0x5B, 0xC3, 0xA9, 0x5D]) == JSONError(.unexpectedCharacter, at: 1))
    }

    @Test func nestingAtTheLimitIsAcceptedAndOverItRejected() throws {
        let depth = JSON.defaultMaxDepth
        let atLimit = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(parseError(atLimit) == nil)
        let over = String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)
        #expect(parseError(over) == JSONError(.tooDeep, at: depth))
        let objects = String(repeating: #"{"a":"#, count: 4) + "1" + String(repeating: "}", count: 4)
        #expect(parseError(Array(objects.utf8), maxDepth: 4) == nil)
        #expect(parseError(Array(objects.utf8), maxDepth: 3) == JSONError(.tooDeep, at: 15))
        // Serialising the deepest accepted value must not exhaust the stack either.
        let parsed = try JSON.parse(atLimit)
        #expect(parsed.serializedString == atLimit)
    }

    @Test func millionDeepArrayBombStopsAtTheLimit() {
        let bomb = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(parseError(bomb) == JSONError(.tooDeep, at: JSON.defaultMaxDepth))
        let unlimited = parseError(bomb, maxDepth: Int.max)
        #expect(unlimited == JSONError(.unexpectedEnd, at: 1_000_000))
    }

    @Test func everyPrefixOfAValidDocumentIsRejectedOrConsistent() throws {
        let document = #" {"_id":"a\"b","n":[-1.5e3,0,true,false,null],"u":"é\ud83d\ude00x","o":{"k":{}}} "#
        let bytes = Array(document.utf8)
        let whole = try JSON.parse(bytes)
        for length in 0..<bytes.count {
            let prefix = Array(bytes[..<length])
            if let value = try? JSON.parse(prefix) {
                // Only the complete value (minus trailing whitespace) may parse, and to the same thing.
                #expect(value == whole, "prefix length \(length)")
            }
        }
        // Number prefixes may be valid numbers themselves; they must still parse consistently.
        let number = Array("-12.5e+3".utf8)
        for length in 0...number.count {
            let text = String(decoding: number[..<length], as: UTF8.self)
            let parsed = try? JSON.parse(Array(number[..<length]))
            #expect(parsed?.numberValue?.text == (JSONNumber(text)?.text), "prefix \(text)")
        }
    }

    @Test func randomBytesNeverCrashTheParser() throws {
        var random = SeededGenerator(seed: 0xC0FFEE)
        let alphabet = Array(#"{}[]",:\-+.0123456789eEtrufalsn u"#.utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xA9, 0xED, 0xFF]
        var accepted = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0..<24, using: &random)
            let bytes = (0..<length).map { _ in
                random.next() % 4 == 0
                    ? UInt8.random(in: 0...255, using: &random) : alphabet.randomElement(using: &random) ?? 0
            }
            if let value = try? JSON.parse(bytes, maxDepth: 8) {
                accepted += 1
                // Whatever parses must re-serialise to text that parses to the same value.
                #expect(try JSON.parse(value.serialized()) == value)
            }
        }
        #expect(accepted > 0)  // The generator does hit valid documents, so the check above runs.
    }

    @Test func mutatedValidDocumentsNeverCrashTheParser() throws {
        var random = SeededGenerator(seed: 42)
        let base = Array(
            #"{"_id":"x","_revisions":{"start":3,"ids":["a","b"]},"v":[1.5,"é",null,{"k":"\u00e9"}]}"#.utf8)
        for _ in 0..<20_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch random.next() % 3 {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: position)
                }
            }
            if let value = try? JSON.parse(bytes) {
                #expect(try JSON.parse(value.serialized()) == value)
            }
        }
    }
}

@Suite struct JSONUnicodeIdentityTests {
    /// Swift's `==` treats precomposed and decomposed "é" as equal; JSON must not merge or equate them.
    @Test func canonicallyEquivalentKeysStayDistinct() throws {
        let json = try JSON.parse("{\"\u{E9}\":1,\"e\u{301}\":2}")
        #expect(json.objectValue?.count == 2)
        #expect(json["\u{E9}"] == 1)
        #expect(json["e\u{301}"] == 2)
        var big = JSONObject()
        for k in 0..<20 { big["k\(k)"] = .int(k) }
        big["\u{E9}"] = 1
        big["e\u{301}"] = 2
        #expect(big.count == 22)
        #expect(big["e\u{301}"] == 2)
    }

    @Test func canonicallyEquivalentStringsAreNotEqualValues() {
        #expect(JSON.string("\u{E9}") != JSON.string("e\u{301}"))
        #expect(JSON.string("\u{E9}") == JSON.string("\u{E9}"))
    }
}

@Suite struct JSONStackTests {
    /// Server threads have 512 KiB stacks; the deepest document the parser accepts must survive being
    /// parsed, compared, serialised and freed there (the last three recurse once per level).
    @Test func deepestAcceptedDocumentFitsInAServerThreadStack() async throws {
        let depth = JSON.defaultMaxDepth
        let text = String(repeating: #"{"a":["#, count: depth / 2) + "1" + String(repeating: "]}", count: depth / 2)
        let outcome = Mutex<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var ok = false
            if let value = try? JSON.parse(text), let again = try? JSON.parse(value.serialized()) {
                ok = value == again && value.serializedString == text
            }
            outcome.withLock { $0 = ok }
            done.signal()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        done.wait()
        #expect(outcome.withLock { $0 } == true)
    }
}

@Suite struct JSONScanLaneTests {
    /// The string scan reads 8 bytes at a time; a special byte must be caught in every lane and in the tail.
    @Test func specialBytesAreFoundAtEveryPosition() throws {
        for position in 0..<40 {
            var raw = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            // A raw control character is rejected exactly where it is.
            raw[position] = 0x01
            #expect(parseError([0x22] + raw + [0x22]) == JSONError(.controlCharacterInString, at: position + 1))
            // An escape is decoded wherever it falls.
            var escaped = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            escaped.replaceSubrange(position..<(position + 1), with: Array(#"\n"#.utf8))
            let value = try JSON.parse([0x22] + escaped + [0x22])
            #expect(value.stringValue?.utf8.count == 40)
            #expect(
                value.stringValue?.utf8.elementsEqual(
                    escaped.prefix(position) + [0x0A] + escaped.suffix(from: position + 2)) == true)
            // Serialising escapes it again at the same place.
            #expect(value.serialized() == [0x22] + escaped + [0x22])
            // A quote ends the string early, leaving trailing data.
            var quoted = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            quoted[position] = 0x22
            #expect(parseError([0x22] + quoted + [0x22])?.kind == .trailingData || position == 39)
            // Non-ASCII bytes are validated wherever they fall.
            var accented = [UInt8](repeating: UInt8(ascii: "a"), count: 40)
            accented.replaceSubrange(position..<(position + 1), with: [0xC3, 0xA9])
            #expect(try JSON.parse([0x22] + accented + [0x22]).serialized() == [0x22] + accented + [0x22])
            accented[position] = 0xFF
            #expect(parseError([0x22] + accented + [0x22]) == JSONError(.invalidUTF8, at: position + 1))
        }
    }
}
