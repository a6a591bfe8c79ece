import Testing

@testable import Blip

@Suite struct BlipVarintTests {
    @Test func knownEncodings() {
        let cases: [(UInt64, [UInt8])] = [
            (0, [0x00]), (1, [0x01]), (127, [0x7F]), (128, [0x80, 0x01]), (300, [0xAC, 0x02]),
            (16384, [0x80, 0x80, 0x01]),
            (UInt64.max, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
        ]
        for (value, bytes) in cases {
            #expect(BlipVarint.encode(value) == bytes)
            #expect(BlipVarint.read(bytes + [0x55]) == .value(value, length: bytes.count))
        }
    }

    @Test func truncatedAndOverlongVarintsAreRefused() {
        #expect(BlipVarint.read([UInt8]()) == .truncated)
        #expect(BlipVarint.read([0x80, 0x80]) == .truncated)
        // Eleven bytes, or a tenth byte carrying more than the 64th bit.
        #expect(BlipVarint.read([UInt8](repeating: 0x80, count: 10) + [0x01]) == .overflow)
        #expect(BlipVarint.read([UInt8](repeating: 0xFF, count: 9) + [0x02]) == .overflow)
    }

    @Test func propertiesDecodeAndRefuseMalformedBlocks() throws {
        let block = Array("Profile\u{0}rev\u{0}id\u{0}doc\u{0}".utf8)
        let properties = try BlipProperties.decode(block)
        #expect(properties["Profile"] == "rev" && properties["id"] == "doc" && properties["profile"] == nil)
        #expect(try properties.encoded() == block)
        #expect(try BlipProperties.decode([UInt8]()).isEmpty)
        #expect(throws: BlipError.protocolViolation("Message properties are not NUL-terminated.")) {
            try BlipProperties.decode(Array("Profile\u{0}rev".utf8))
        }
        #expect(throws: BlipError.protocolViolation("A message property has no value.")) {
            try BlipProperties.decode(Array("Profile\u{0}rev\u{0}id\u{0}".utf8))
        }
        #expect(throws: BlipError.protocolViolation("A message property is not UTF-8.")) {
            try BlipProperties.decode([0xFF, 0, 0x61, 0])
        }
        #expect(throws: BlipError.invalidMessage("A property holds a NUL byte.")) {
            try BlipProperties([("id", "a\u{0}b")]).encoded()
        }
    }
}
