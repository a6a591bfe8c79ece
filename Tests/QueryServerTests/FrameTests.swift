import QueryServer
import Testing

@Suite("Query-server framing")
struct FrameTests {
    @Test func roundTripsInArbitraryPieces() throws {
        let payloads: [[UInt8]] = [Array("{\"a\":1}".utf8), [], Array(repeating: 0x41, count: 70_000)]
        let stream = payloads.flatMap { Frame.encode($0) }
        for pieceSize in [1, 3, 4, 5, 4096, stream.count] {
            var decoder = FrameDecoder()
            var received: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let end = min(offset + pieceSize, stream.count)
                decoder.feed(stream[offset..<end])
                while let frame = try decoder.next() { received.append(frame) }
                offset = end
            }
            try decoder.finish()
            #expect(received == payloads)
        }
    }

    @Test func oversizedLengthIsRefusedBeforeItsPayload() {
        var decoder = FrameDecoder(maxPayload: 1024)
        decoder.feed([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: FrameError.oversized(announced: 0xFFFF_FFFF, limit: 1024)) { try decoder.next() }
        var exact = FrameDecoder(maxPayload: 3)
        exact.feed(Frame.encode([1, 2, 3]))
        #expect((try? exact.next()) == [1, 2, 3])
        var over = FrameDecoder(maxPayload: 3)
        over.feed(Frame.encode([1, 2, 3, 4]))
        #expect(throws: FrameError.oversized(announced: 4, limit: 3)) { try over.next() }
    }

    @Test func streamEndingInsideAFrameIsTruncated() throws {
        var header = FrameDecoder()
        header.feed([0, 0])
        #expect(try header.next() == nil)
        #expect(throws: FrameError.truncated(received: 2, expected: 4)) { try header.finish() }
        var body = FrameDecoder()
        body.feed([0, 0, 0, 10, 1, 2, 3])
        #expect(try body.next() == nil)
        #expect(throws: FrameError.truncated(received: 3, expected: 10)) { try body.finish() }
        var clean = FrameDecoder()
        clean.feed(Frame.encode([9]))
        #expect(try clean.next() == [9])
        try clean.finish()
    }

    @Test func manyFramesDoNotKeepConsumedBytes() throws {
        var decoder = FrameDecoder()
        let frame = Frame.encode(Array(repeating: 7, count: 100_000))
        for _ in 0..<50 {
            decoder.feed(frame)
            #expect(try decoder.next()?.count == 100_000)
        }
        #expect(decoder.pendingBytes == 0)
    }
}

@Suite("Duktape text")
struct DuktapeTextTests {
    @Test func astralCharactersGoInAsEscapes() {
        let input = Array("[\"a😀b\"]".utf8)
        #expect(String(decoding: DuktapeText.forEngine(input), as: UTF8.self) == "[\"a\\ud83d\\ude00b\"]")
        let ascii = Array("{\"x\":\"é\"}".utf8)
        #expect(DuktapeText.forEngine(ascii) == ascii)
    }

    @Test func surrogatePairsComeOutAsUTF8() {
        // U+1F600 as CESU-8: ED A0 BD ED B8 80.
        let cesu: [UInt8] = [0x22, 0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80, 0x22]
        let out = cesu.withUnsafeBytes { DuktapeText.fromEngine($0) }
        #expect(String(decoding: out, as: UTF8.self) == "\"😀\"")
    }

    @Test func loneSurrogatesBecomeReplacementCharacters() {
        let lone: [UInt8] = [0xED, 0xA0, 0xBD, 0x41, 0xED, 0xB8, 0x80]
        let out = lone.withUnsafeBytes { DuktapeText.fromEngine($0) }
        #expect(out == [0xEF, 0xBF, 0xBD, 0x41, 0xEF, 0xBF, 0xBD])
        let hangul: [UInt8] = Array("한".utf8)  // ED 95 9C: an ED lead that is not a surrogate
        #expect(hangul.withUnsafeBytes { DuktapeText.fromEngine($0) } == hangul)
    }
}
