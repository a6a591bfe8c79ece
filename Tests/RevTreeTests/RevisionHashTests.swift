import Testing

@testable import RevTree

/// `ErlangTerm.externalFormat` is byte for byte `term_to_binary(T, [{minor_version, 1}])` of OTP 25 (the release
/// CouchDB 3.4.3 runs on); each expected array was printed by
/// `erl -noshell -eval 'io:format("~w~n", [binary_to_list(term_to_binary(T, [{minor_version,1}]))]), halt().'`.
@Suite struct ErlangTermTests {
    static func bytes(_ term: ErlangTerm) -> [UInt8] { term.externalFormat }

    @Test func atomsAreLatin1AtomExt() {
        #expect(Self.bytes(.bool(true)) == [131, 100, 0, 4, 116, 114, 117, 101])
        #expect(Self.bytes(.atom("null")) == [131, 100, 0, 4, 110, 117, 108, 108])
    }

    @Test func integersPickTheSmallestEncodingErlangDoes() {
        #expect(Self.bytes(.int(0)) == [131, 97, 0])
        #expect(Self.bytes(.int(255)) == [131, 97, 255])
        #expect(Self.bytes(.int(256)) == [131, 98, 0, 0, 1, 0])
        #expect(Self.bytes(.int(-1)) == [131, 98, 255, 255, 255, 255])
        #expect(Self.bytes(.int(2_147_483_647)) == [131, 98, 127, 255, 255, 255])
        #expect(Self.bytes(.int(2_147_483_648)) == [131, 110, 4, 0, 0, 0, 0, 128])
        #expect(Self.bytes(.int(-2_147_483_648)) == [131, 98, 128, 0, 0, 0])
        #expect(Self.bytes(.int(-2_147_483_649)) == [131, 110, 4, 1, 1, 0, 0, 128])
        #expect(Self.bytes(.int(.min)) == [131, 110, 8, 1, 0, 0, 0, 0, 0, 0, 0, 128])
    }

    @Test func bignumsBeyondSixtyFourBits() {
        let twoTo64: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 1]
        #expect(Self.bytes(.integer(negative: false, magnitude: twoTo64)) == [131, 110, 9, 0] + twoTo64)
        #expect(Self.bytes(.integer(negative: true, magnitude: twoTo64)) == [131, 110, 9, 1] + twoTo64)
        // 1 bsl 2040 has 256 digit bytes: LARGE_BIG_EXT.
        let huge = [UInt8](repeating: 0, count: 255) + [1]
        #expect(Self.bytes(.integer(negative: false, magnitude: huge)) == [131, 111, 0, 0, 1, 0, 0] + huge)
    }

    @Test func negativeZeroAndLeadingZeroBytesNormalise() {
        #expect(Self.bytes(.integer(negative: true, magnitude: [])) == [131, 97, 0])
        #expect(Self.bytes(.integer(negative: false, magnitude: [7, 0, 0, 0, 0, 0, 0, 0, 0, 0])) == [131, 97, 7])
    }

    @Test func floatsAreNewFloatExt() {
        #expect(Self.bytes(.float(1.0)) == [131, 70, 63, 240, 0, 0, 0, 0, 0, 0])
        #expect(Self.bytes(.float(-0.0)) == [131, 70, 128, 0, 0, 0, 0, 0, 0, 0])
        #expect(Self.bytes(.float(0.1)) == [131, 70, 63, 185, 153, 153, 153, 153, 153, 154])
    }

    @Test func containers() {
        #expect(Self.bytes(.tuple([.list([])])) == [131, 104, 1, 106])
        #expect(Self.bytes(.list([])) == [131, 106])
        #expect(
            Self.bytes(.tuple([.list([.tuple([.binary([97]), .list([])])])]))
                == [131, 104, 1, 108, 0, 0, 0, 1, 104, 2, 109, 0, 0, 0, 1, 97, 106, 106])
        let wide = Self.bytes(.tuple((1...256).map { .int($0) }))
        #expect(wide.prefix(8) == [131, 105, 0, 0, 1, 0, 97, 1])
    }

    @Test func listsOfSmallIntegersAreStrings() {
        #expect(Self.bytes(.list([.int(1), .int(2), .int(255)])) == [131, 107, 0, 3, 1, 2, 255])
        #expect(Self.bytes(.list([.int(1), .int(256)])) == [131, 108, 0, 0, 0, 2, 97, 1, 98, 0, 0, 1, 0, 106])
        // STRING_EXT holds at most 65,535: one more is a LIST_EXT.
        #expect(Self.bytes(.list(Array(repeating: .int(7), count: 65_535))).count == 65_539)
        #expect(Self.bytes(.list(Array(repeating: .int(7), count: 65_536))).prefix(6) == [131, 108, 0, 1, 0, 0])
    }
}

/// What jiffy hands CouchDB for a body, and the revision ids that come out, checked against revs CouchDB 3.4.3
/// gave for the same edits (conformance/test_rev_hash.py asserts many more over HTTP).
@Suite struct RevisionHashTests {
    static func term(_ json: String) -> [UInt8]? { JiffyTerm.encoded(Array(json.utf8)) }
    /// A term's external format without the version byte, as `JiffyTerm` writes a body.
    static func bytes(_ term: ErlangTerm) -> [UInt8] { Array(term.externalFormat.dropFirst()) }
    static func first(_ json: String, _ attachments: [RevisionHash.Attachment] = []) -> String {
        RevisionHash.compute(parent: nil, deleted: false, body: Array(json.utf8), attachments: attachments)
    }

    @Test func revsCouchDBGaveForTheSameBodies() {
        #expect(Self.first("{}") == "967a00dff5e02add41819138abb3284d")
        #expect(Self.first(#"{"a":1}"#) == "23202479633c2b380f79507a776743d5")
        #expect(Self.first(#"{"a":1.0}"#) == "8a159b695bf2bd957f1a435bfd6e1739")
        #expect(Self.first(#"{"a":1e2}"#) == "fcb573f41c731df1c79b9d2a8111e8e7")
        #expect(Self.first(#"{"a":-0}"#) == "dcf485487e051d7f9b7c62bd4265a425")
        #expect(Self.first(#"{"a":-0.0}"#) == "79e62e17829588afea5328e32c7e34af")
        #expect(Self.first(#"{"a":18446744073709551616}"#) == "02621d7913faebde4c9d1efebd8500b4")
        #expect(Self.first(#"{"u":"h\u00e9llo \ud83d\ude00 日"}"#) == "f26273dd08db566b56b3e0d50baf9cde")
        #expect(Self.first(#"{"a":true,"b":false,"c":null}"#) == "cb8c66602b212aa81979fb8fa1657af3")
    }

    @Test func parentDeletionAndAttachmentsAsCouchDBHashesThem() throws {
        // CouchDB: PUT {"a":1} then PUT it again on 1-2320…, then DELETE it.
        let first = try RevID(parsing: "1-23202479633c2b380f79507a776743d5")
        let second = RevisionHash.compute(parent: first, deleted: false, body: Array(#"{"a":1}"#.utf8), attachments: [])
        #expect(second == "28b0871b96782f88a644f93a6afa52bf")
        let deleted = RevisionHash.compute(
            parent: RevID(pos: 2, hash: second), deleted: true, body: Array("{}".utf8), attachments: [])
        #expect(deleted == "b6650f48779e3dc2e2f2b3cae94444ad")
        // CouchDB: PUT /db/att2/x.bin with bytes 00 01 and no Content-Type.
        let attachment = RevisionHash.Attachment(
            name: "x.bin", contentType: "application/octet-stream", digest: "md5-RBB3zJ5XVU3Udr37i4uBAg==")
        #expect(Self.first("{}", [attachment]) == "da0c51a1a3244cf160e1c8d5fd0bb5d8")
    }

    @Test func attachmentsAreHashedInReverseDocumentOrder() {
        let a = RevisionHash.Attachment(name: "a", contentType: "image/png", digest: "md5-RBB3zJ5XVU3Udr37i4uBAg==")
        let b = RevisionHash.Attachment(name: "b", contentType: "image/png", digest: "md5-RBB3zJ5XVU3Udr37i4uBAg==")
        func tuple(_ name: String) -> ErlangTerm {
            .tuple([.binary(Array(name.utf8)), .binary(Array("image/png".utf8)), .binary(md5Of0001)])
        }
        let expected = ErlangTerm.list([
            .bool(false), .int(0), .int(0), .tuple([.list([])]), .list([tuple("b"), tuple("a")]),
        ])
        #expect(
            RevisionHash.externalFormat(parent: nil, deleted: false, body: Array("{}".utf8), attachments: [a, b])
                == expected.externalFormat)
    }

    let md5Of0001: [UInt8] = [
        0x44, 0x10, 0x77, 0xcc, 0x9e, 0x57, 0x55, 0x4d, 0xd4, 0x76, 0xbd, 0xfb, 0x8b, 0x8b, 0x81, 0x02,
    ]

    @Test func parentRevIsItsSixteenBytesOnlyWhenItIsThirtyTwoHexDigits() {
        #expect(RevisionHash.revBinary("23202479633c2b380f79507a776743d5").count == 16)
        #expect(RevisionHash.revBinary("23202479633C2B380F79507A776743D5").count == 16)
        #expect(RevisionHash.revBinary("abc") == Array("abc".utf8))
        // `+f` would pass a radix parse; it is not hex.
        let notHex = "+f" + String(repeating: "0", count: 30)
        #expect(RevisionHash.revBinary(notHex) == Array(notHex.utf8))
    }

    /// The bignum bytes are erl's `term_to_binary(-123456789012345678901234567890)` after its 4-byte header.
    @Test func numbersAsJiffyDecodesThem() {
        #expect(Self.term("1") == Self.bytes(.int(1)))
        #expect(Self.term("-0") == Self.bytes(.int(0)))
        #expect(Self.term("1.0") == Self.bytes(.float(1.0)))
        #expect(Self.term("1E2") == Self.bytes(.float(100)))
        #expect(Self.term("-0.0") == Self.bytes(.float(-0.0)))
        #expect(Self.term("12345678901234567890.0") == Self.bytes(.float(12_345_678_901_234_567_890.0)))
        #expect(
            Self.term("-123456789012345678901234567890")
                == Self.bytes(
                    .integer(negative: true, magnitude: [210, 10, 63, 78, 238, 224, 115, 195, 246, 15, 233, 142, 1])))
    }

    @Test func stringsDecodeEscapesToUTF8() {
        #expect(Self.term(#""a\"\\\/\b\f\n\r\t""#) == Self.bytes(.binary(Array("a\"\\/\u{8}\u{c}\n\r\t".utf8))))
        #expect(Self.term(#""\u00e9\ud83d\ude00""#) == Self.bytes(.binary(Array("é😀".utf8))))
        #expect(Self.term(#""\u00E9""#) == Self.bytes(.binary([0xC3, 0xA9])))
    }

    @Test func objectsKeepTheOrderSentAndArraysOfSmallIntegersStayLists() {
        #expect(
            Self.term(#" { "z" : 1 , "a" : [ ] } "#)
                == Self.bytes(
                    .tuple([.list([.tuple([.binary([122]), .int(1)]), .tuple([.binary([97]), .list([])])])])))
        #expect(Self.term("[1,2,3]") == Self.bytes(.list([.int(1), .int(2), .int(3)])))
        #expect(Self.term("{}") == Self.bytes(.tuple([.list([])])))
        // Written in one pass: inner lists of small integers become strings inside an outer LIST_EXT.
        let mixed = ErlangTerm.list([.list([.int(1), .int(2)]), .list([.int(3)]), .int(256), .int(-1), .list([])])
        #expect(Self.term("[[1,2],[3],256,-1,[]]") == Self.bytes(mixed))
        let many = "[" + Array(repeating: "7", count: 65_536).joined(separator: ",") + "]"
        #expect(Self.term(many) == Self.bytes(.list(Array(repeating: .int(7), count: 65_536))))
        let most = "[" + Array(repeating: "7", count: 65_535).joined(separator: ",") + "]"
        #expect(Self.term(most) == Self.bytes(.list(Array(repeating: .int(7), count: 65_535))))
    }

    @Test func malformedBodiesAreRefusedNotGuessed() {
        let hostile = [
            "", "{", "{\"a\"", "{\"a\":}", "[1,]", "[1 2]", "01", "1.", ".5", "-", "1e", "tru", "nul",
            "\"unterminated", "\"\\x\"", "\"\\u12\"", "\"\\ud83d\"", "\"\\ud83d\\u0041\"", "\"raw\ncontrol\"",
            "{} x", "{1:2}", "1e400", "-1e400",
        ]
        for text in hostile { #expect(Self.term(text) == nil, "\(text)") }
        // A refused body leaves what was already written untouched.
        var out: [UInt8] = [1, 2, 3]
        #expect(!JiffyTerm.encode(Array(#"{"a":[1,2,{"b":"#.utf8), into: &out))
        #expect(out == [1, 2, 3])
    }

    @Test func hostileNestingAndHugeIntegersAreBounded() {
        let deep =
            String(repeating: "[", count: JiffyTerm.maxDepth + 1)
            + String(repeating: "]", count: JiffyTerm.maxDepth + 1)
        #expect(Self.term(deep) == nil)
        let allowed = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(Self.term(allowed) != nil)
        #expect(Self.term(String(repeating: "9", count: JiffyTerm.maxIntegerDigits)) != nil)
        #expect(Self.term(String(repeating: "9", count: JiffyTerm.maxIntegerDigits + 1)) == nil)
        // A body the reader refuses still hashes, as its bytes: the md5 of term_to_binary([false, 0, 0,
        // <<"[1e400]">>, []]), worked out by hand from the external term format (131, LIST_EXT of 5, ATOM_EXT false,
        // two SMALL_INTEGER_EXT 0, BINARY_EXT of 7, NIL, NIL).
        let refused = Array("[1e400]".utf8)
        #expect(
            RevisionHash.compute(parent: nil, deleted: false, body: refused, attachments: [])
                == "d75ee2b66b8906528f3b39f8205bc12f")
    }

    /// Bytes that never came from couchlite's serializer (invalid UTF-8, truncations of a real body, noise) are
    /// refused or decoded, never a crash, and hash the same every time.
    @Test func arbitraryBytesNeverCrashTheReader() {
        var state: UInt64 = 0x2604
        func next() -> UInt8 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        let real = Array(
            #"{"a":[1,-2.5e3,{"b":"\u00e9\ud83d\ude00"}],"c":null,"d":true,"e":123456789012345678901}"#.utf8)
        for cut in 0...real.count { _ = JiffyTerm.encoded(Array(real[..<cut])) }
        #expect(JiffyTerm.encoded(real) != nil)
        for _ in 0..<2000 {
            let noise = (0..<Int(next() % 40)).map { _ in next() }
            _ = JiffyTerm.encoded(noise)
            _ = JiffyTerm.encoded([UInt8(ascii: "\"")] + noise + [UInt8(ascii: "\"")])
        }
        // A string of invalid UTF-8 is read as the bytes between its quotes: the term of the test above with the
        // BINARY_EXT of C3 28 FF as its body (hashed by hand the same way).
        let invalidUTF8: [UInt8] = [0x22, 0xC3, 0x28, 0xFF, 0x22]
        #expect(
            RevisionHash.compute(parent: nil, deleted: false, body: invalidUTF8, attachments: [])
                == "ec166cad736d91831eb538134d677306")
    }

    @Test func decimalToBinaryMatchesMachineIntegers() {
        for value in [UInt64(0), 1, 255, 256, 10_000_000_000_000_000_000, .max] {
            var expected: [UInt8] = []
            var rest = value
            while rest != 0 {
                expected.append(UInt8(truncatingIfNeeded: rest))
                rest >>= 8
            }
            #expect(JiffyTerm.magnitude(decimal: Array(String(value).utf8)[...]) == expected)
        }
    }
}
