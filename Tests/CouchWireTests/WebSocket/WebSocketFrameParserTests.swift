import Testing

@testable import CouchWire

@Suite struct WebSocketFrameParserTests {
    // MARK: - RFC 6455 §5.7's examples, whole and one byte at a time

    @Test(arguments: [false, true]) func rfcMaskedHelloIsAText(bytewise: Bool) throws {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        let (events, partial) = try parseEvents(bytes, bytewise: bytewise)
        #expect(events == [.message(.text("Hello"))])
        #expect(!partial)
    }

    @Test(arguments: [false, true]) func rfcFragmentedUnmaskedHelloJoinsAsAClient(bytewise: Bool) throws {
        let bytes: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]
        let (events, _) = try parseEvents(bytes, role: .client, bytewise: bytewise)
        #expect(events == [.message(.text("Hello"))])
    }

    @Test(arguments: [false, true]) func rfcPingAndPongCarryTheirPayload(bytewise: Bool) throws {
        let ping: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        let pong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(try parseEvents(ping, role: .client, bytewise: bytewise).events == [.ping(Array("Hello".utf8))])
        #expect(try parseEvents(pong, bytewise: bytewise).events == [.pong(Array("Hello".utf8))])
    }

    @Test(arguments: [false, true]) func sixteenAndSixtyFourBitLengthsAreRead(bytewise: Bool) throws {
        let medium = (0..<256).map { UInt8($0 & 0xFF) }
        let large = (0..<65536).map { UInt8(($0 * 7) & 0xFF) }
        // RFC 6455 §5.7: 256 bytes are `82 7E 01 00`, 64 KiB `82 7F 00 00 00 00 00 01 00 00` (here masked).
        let mediumFrame = clientFrame(0x2, medium)
        #expect(Array(mediumFrame.prefix(4)) == [0x82, 0xFE, 0x01, 0x00])
        let largeFrame = clientFrame(0x2, large)
        #expect(Array(largeFrame.prefix(10)) == [0x82, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0])
        let events = try parseEvents(mediumFrame + largeFrame, bytewise: bytewise).events
        #expect(events == [.message(.binary(medium)), .message(.binary(large))])
    }

    @Test(arguments: [false, true]) func controlFramesInterleaveWithAFragmentedMessage(bytewise: Bool) throws {
        let bytes =
            clientFrame(0x2, [1, 2], fin: false) + clientFrame(0x9, [9]) + clientFrame(0x0, [3], fin: false)
            + clientFrame(0xA, []) + clientFrame(0x0, [4, 5])
        let events = try parseEvents(bytes, bytewise: bytewise).events
        #expect(events == [.ping([9]), .pong([]), .message(.binary([1, 2, 3, 4, 5]))])
    }

    @Test(arguments: [false, true]) func emptyMessagesAndEmptyFragmentsAreMessages(bytewise: Bool) throws {
        let bytes = clientFrame(0x2, []) + clientFrame(0x1, [], fin: false) + clientFrame(0x0, [])
        #expect(try parseEvents(bytes, bytewise: bytewise).events == [.message(.binary([])), .message(.text(""))])
    }

    @Test func textSplitInsideACharacterAcrossFragmentsIsValid() throws {
        let euro: [UInt8] = [0xE2, 0x82, 0xAC]
        let bytes = clientFrame(0x1, [euro[0]], fin: false) + clientFrame(0x0, Array(euro[1...]))
        #expect(try parseEvents(bytes, bytewise: true).events == [.message(.text("€"))])
    }

    @Test func closeCarriesItsCodeAndReason() throws {
        let bytes = clientFrame(0x8, [0x03, 0xE8] + Array("bye".utf8)) + clientFrame(0x8, [])
        #expect(
            try parseEvents(bytes, bytewise: true).events == [
                .close(code: .normal, reason: "bye"), .close(code: nil, reason: ""),
            ])
        // LiteCore's application codes (4001 transient, 4002 permanent) are in the private range.
        #expect(
            try parseEvents(clientFrame(0x8, [0x0F, 0xA1]), bytewise: false).events == [
                .close(code: WebSocketCloseCode(rawValue: 4001), reason: "")
            ])
    }

    @Test func aTruncatedFrameWaitsForMoreAndSaysItIsPartial() throws {
        let frame = clientFrame(0x2, [1, 2, 3, 4, 5, 6])
        for cut in 1..<frame.count {
            let (events, partial) = try parseEvents(Array(frame.prefix(cut)), bytewise: false)
            #expect(events.isEmpty)
            #expect(partial)
        }
        #expect(try parseEvents(clientFrame(0x2, [1], fin: false), bytewise: false).partial)
    }

    // MARK: - Attacks and broken frames (each fails the connection with its code)

    @Test func unmaskedClientFrameIsRefused() {
        #expect(
            parseError(clientFrame(0x2, [1, 2, 3], mask: nil)) == .protocolViolation("Unmasked frame from a client."))
        #expect(parseError(clientFrame(0x2, [1]), role: .client)?.closeCode == .protocolError)
    }

    @Test(arguments: [UInt8(0x40), 0x20, 0x10]) func reservedBitsAreRefused(bit: UInt8) {
        #expect(parseError(clientFrame(0x2, [1], headerBits: bit))?.closeCode == .protocolError)
    }

    @Test(arguments: [UInt8(3), 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF]) func reservedOpcodesAreRefused(opcode: UInt8) {
        #expect(parseError(clientFrame(opcode, [1])) == .protocolViolation("Reserved opcode \(opcode)."))
    }

    @Test func fragmentedControlFrameIsRefused() {
        #expect(parseError(clientFrame(0x9, [1], fin: false)) == .protocolViolation("Fragmented control frame."))
    }

    @Test func controlFrameOver125BytesIsRefusedBeforeItsPayload() {
        let header = Array(clientFrame(0x9, [UInt8](repeating: 0, count: 126)).prefix(2))
        #expect(parseError(header) == .protocolViolation("Control frame longer than 125 bytes."))
    }

    @Test func continuationWithoutAMessageIsRefused() {
        #expect(parseError(clientFrame(0x0, [1]))?.closeCode == .protocolError)
    }

    @Test func newDataFrameInsideAFragmentedMessageIsRefused() {
        let bytes = clientFrame(0x1, [0x61], fin: false) + clientFrame(0x2, [1])
        #expect(parseError(bytes) == .protocolViolation("New data frame inside a fragmented message."))
    }

    @Test func nonMinimalLengthsAreRefused() {
        // 5 bytes written with the 16-bit form, and 200 bytes with the 64-bit form.
        let sixteen: [UInt8] = [0x82, 0xFE, 0x00, 0x05, 1, 2, 3, 4]
        let sixtyFour: [UInt8] = [0x82, 0xFF, 0, 0, 0, 0, 0, 0, 0, 200, 1, 2, 3, 4]
        #expect(parseError(sixteen) == .protocolViolation("Length not minimally encoded."))
        #expect(parseError(sixtyFour) == .protocolViolation("Length not minimally encoded."))
    }

    @Test func lengthWithTheSixtyFourthBitSetIsRefused() {
        let bytes: [UInt8] = [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4]
        #expect(parseError(bytes) == .protocolViolation("Length over 63 bits."))
    }

    @Test func oversizedFrameIsRefusedFromItsHeaderAlone() {
        // A header announcing 2^62 bytes: refused (1009) before a byte of payload is awaited or allocated.
        let bytes: [UInt8] = [0x82, 0xFF, 0x40, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]
        #expect(parseError(bytes)?.closeCode == .messageTooBig)
        let limits = WebSocketLimits(maxFrameBytes: 100, maxMessageBytes: 1000)
        #expect(
            parseError(clientFrame(0x2, [UInt8](repeating: 1, count: 101)), limits: limits)?.closeCode == .messageTooBig
        )
        #expect(parseError(clientFrame(0x2, [UInt8](repeating: 1, count: 100)), limits: limits) == nil)
    }

    @Test func oversizedMessageAcrossFragmentsIsRefused() {
        let limits = WebSocketLimits(maxFrameBytes: 100, maxMessageBytes: 250)
        let piece = [UInt8](repeating: 7, count: 100)
        let fits = clientFrame(0x2, piece, fin: false) + clientFrame(0x0, piece, fin: false) + clientFrame(0x0, [1])
        #expect(parseError(fits, limits: limits) == nil)
        let over = clientFrame(0x2, piece, fin: false) + clientFrame(0x0, piece, fin: false) + clientFrame(0x0, piece)
        #expect(parseError(over, limits: limits) == .tooBig("Message longer than 250 bytes."))
    }

    @Test func invalidUTF8TextIsRefusedWith1007() {
        for bad: [UInt8] in [[0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80]] {
            #expect(parseError(clientFrame(0x1, bad))?.closeCode == .invalidPayload)
        }
        // Binary messages are not checked.
        #expect(parseError(clientFrame(0x2, [0xFF])) == nil)
    }

    @Test func closeWithAOneBytePayloadIsRefused() {
        #expect(parseError(clientFrame(0x8, [0x03])) == .protocolViolation("Close frame with a one-byte payload."))
    }

    @Test(arguments: [UInt16(0), 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535])
    func closeWithAReservedOrUnassignedCodeIsRefused(code: UInt16) {
        let payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
        #expect(parseError(clientFrame(0x8, payload))?.closeCode == .protocolError)
    }

    @Test func closeReasonThatIsNotUTF8IsRefusedWith1007() {
        #expect(parseError(clientFrame(0x8, [0x03, 0xE8, 0xFF])) == .invalidUTF8)
    }

    @Test func aFailedParserRefusesEveryLaterCall() throws {
        var parser = WebSocketFrameParser(role: .server)
        let bad = clientFrame(0x2, [1], mask: nil)
        #expect(throws: WebSocketError.self) { _ = try bad.withUnsafeBytes { try parser.parse($0) } }
        let good = clientFrame(0x2, [1])
        #expect(throws: WebSocketError.self) { _ = try good.withUnsafeBytes { try parser.parse($0) } }
    }
}
