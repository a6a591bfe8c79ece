import Testing

@testable import CouchWire

@Suite struct WebSocketFrameWriterTests {
    @Test func rfcExamplesAreWrittenByteForByte() {
        #expect(
            WebSocketFrameWriter.frame(.text, payload: Array("Hello".utf8)) == [
                0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F,
            ])
        #expect(
            WebSocketFrameWriter.frame(.text, payload: Array("Hello".utf8), mask: (0x37, 0xFA, 0x21, 0x3D))
                == [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        #expect(
            WebSocketFrameWriter.frame(.text, payload: Array("Hel".utf8), fin: false) == [0x01, 0x03, 0x48, 0x65, 0x6C])
        #expect(WebSocketFrameWriter.frame(.continuation, payload: Array("lo".utf8)) == [0x80, 0x02, 0x6C, 0x6F])
    }

    @Test func lengthsUseTheShortestForm() {
        for (count, header) in [
            (125, [0x82, 125]), (126, [0x82, 126, 0, 126]), (65535, [0x82, 126, 0xFF, 0xFF]),
            (65536, [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0]),
        ] as [(Int, [UInt8])] {
            let frame = WebSocketFrameWriter.frame(.binary, payload: [UInt8](repeating: 1, count: count))
            #expect(Array(frame.prefix(header.count)) == header)
            #expect(frame.count == header.count + count)
        }
    }

    @Test func closeFramesCarryTheCodeAndACutReason() {
        #expect(
            WebSocketFrameWriter.close(code: .protocolError, reason: "bad") == [
                0x88, 0x05, 0x03, 0xEA, 0x62, 0x61, 0x64,
            ])
        #expect(WebSocketFrameWriter.close(code: nil) == [0x88, 0x00])
        // 70 two-byte characters: cut to 61 of them (122 bytes) + the code, never inside a character.
        let frame = WebSocketFrameWriter.close(code: .normal, reason: String(repeating: "é", count: 70))
        #expect(frame[1] == 124)
        #expect(String(validating: frame[4...], as: UTF8.self) == String(repeating: "é", count: 61))
    }

    @Test func serverFramesParseBackAsAClientReadsThem() throws {
        let payloads: [[UInt8]] = [[], [0], Array(0...255), [UInt8](repeating: 0xAB, count: 70_000)]
        var bytes: [UInt8] = []
        for payload in payloads { bytes += WebSocketFrameWriter.message(.binary(payload)) }
        let events = try parseEvents(bytes, role: .client, bytewise: false).events
        #expect(events == payloads.map { .message(.binary($0)) })
    }
}
