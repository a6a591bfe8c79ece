import CouchWire
import Testing

@Suite("MultipartHostile")
struct MultipartHostileTests {
    private static let good = Array(
        "--b\r\nContent-Type: application/json\r\n\r\n{}\r\n--b\r\nContent-Length: 3\r\n\r\nabc\r\n--b--".utf8)

    @Test(arguments: Feeding.all)
    func refusesBodyWithWrongBoundary(feeding: Feeding) {
        // Small body: never finds the boundary, so it is truncated at the end.
        #expect(multipartError(Self.good, boundary: "c", feeding: feeding) == .truncated)
        // Large body: refused while streaming, before it is all read.
        let large = [UInt8](repeating: UInt8(ascii: "x"), count: MultipartLimits.maxPreambleLength + 100)
        #expect(multipartError(large, boundary: "b", feeding: feeding) == .preambleTooLarge)
    }

    @Test(arguments: Feeding.all)
    func refusesTruncatedPart(feeding: Feeding) {
        for cut in [10, 40, 45, 55, Self.good.count - 4, Self.good.count - 1] {
            #expect(
                multipartError(Array(Self.good.prefix(cut)), boundary: "b", feeding: feeding) == .truncated,
                "cut \(cut)")
        }
    }

    @Test func refusesMissingClosingBoundary() {
        let body = Array("--b\r\n\r\ndata\r\n--b\r\n\r\nmore".utf8)
        #expect(multipartError(body, boundary: "b") == .truncated)
        #expect(multipartError(body + Array("\r\n--b".utf8), boundary: "b") == .truncated)
        #expect(multipartError(body + Array("\r\n--b-".utf8), boundary: "b") == .truncated)
        #expect(multipartError(body + Array("\r\n--b--".utf8), boundary: "b") == nil)
    }

    @Test(arguments: [Feeding.whole, Feeding.random(seed: 3, maxChunk: 1000)])
    func refusesHugeHeaderBlock(feeding: Feeding) {
        let header = "X-Pad: " + String(repeating: "a", count: MultipartLimits.maxPartHeaderBlockLength) + "\r\n\r\n"
        let body = Array(("--b\r\n" + header + "x\r\n--b--").utf8)
        #expect(multipartError(body, boundary: "b", feeding: feeding) == .headerBlockTooLarge)
        // Just under the limit is fine.
        let fits = "X-Pad: " + String(repeating: "a", count: MultipartLimits.maxPartHeaderBlockLength - 13) + "\r\n\r\n"
        #expect(multipartError(Array(("--b\r\n" + fits + "x\r\n--b--").utf8), boundary: "b", feeding: feeding) == nil)
    }

    @Test func refusesHeaderBlockThatNeverEnds() {
        var parser = MultipartParser(boundary: Array("b".utf8))
        #expect(throws: Never.self) { _ = try parser.parse(Array("--b\r\nA: b\r\n".utf8)) }
        let line = Array("X: y\r\n".utf8)
        #expect(throws: MultipartError.headerBlockTooLarge) {
            for _ in 0..<(MultipartLimits.maxPartHeaderBlockLength / line.count + 1) { _ = try parser.parse(line) }
        }
    }

    @Test func refusesTooManyParts() {
        let part = "\r\n--b\r\n\r\nx"
        let ok = Array(
            ("--b\r\n\r\nx" + String(repeating: part, count: MultipartLimits.maxParts - 1) + "\r\n--b--").utf8)
        #expect(multipartError(ok, boundary: "b") == nil)
        let tooMany = Array(
            ("--b\r\n\r\nx" + String(repeating: part, count: MultipartLimits.maxParts) + "\r\n--b--").utf8)
        #expect(multipartError(tooMany, boundary: "b") == .tooManyParts)
    }

    @Test(arguments: [
        "--b\r\nNoColonHere\r\n\r\nx\r\n--b--",
        "--b\r\n: empty name\r\n\r\nx\r\n--b--",
        "--b\r\nBad Name: v\r\n\r\nx\r\n--b--",
        "--b\r\nA: b\nSmuggled: c\r\n\r\nx\r\n--b--",
        "--b\r\nA: b\rSmuggled: c\r\n\r\nx\r\n--b--",
    ])
    func refusesMalformedHeaderLines(body: String) {
        #expect(multipartError(Array(body.utf8), boundary: "b") == .malformedHeader)
        #expect(multipartError(Array(body.utf8), boundary: "b", feeding: .byteAtATime) == .malformedHeader)
    }

    @Test(arguments: [
        "--bX\r\n\r\nx\r\n--b--",  // boundary text continues: a longer boundary is not ours
        "--b\r\n\r\nx\r\n--b-x",  // half a closing delimiter
        "--b\nA: b\n\nx\n--b--",  // LF-only framing, which CouchDB does not accept either
        "--b \t x\r\n\r\nx\r\n--b--",  // padding followed by text
    ])
    func refusesMalformedDelimiterLines(body: String) {
        #expect(multipartError(Array(body.utf8), boundary: "b") == .malformedDelimiter)
    }

    @Test func refusesPaddingFlood() {
        let body = Array(
            ("--b" + String(repeating: " ", count: MultipartLimits.maxTransportPadding + 1) + "\r\n\r\n").utf8)
        #expect(multipartError(body, boundary: "b") == .malformedDelimiter)
    }

    @Test func staysFailedAfterAnError() {
        var parser = MultipartParser(boundary: Array("b".utf8))
        #expect(throws: MultipartError.malformedDelimiter) { _ = try parser.parse(Array("--bX".utf8)) }
        #expect(throws: MultipartError.malformedDelimiter) { _ = try parser.parse(Array("\r\n--b--".utf8)) }
        #expect(throws: MultipartError.malformedDelimiter) { try parser.finish() }
    }

    @Test func neverBuffersPartBodies() throws {
        // 4 MiB body in 64 KiB chunks: every chunk's data comes straight back out (minus at most
        // the delimiter prefix the matcher holds), so nothing accumulates.
        var parser = MultipartParser(boundary: Array("0123456789abcdef0123456789abcdef".utf8))
        _ = try parser.parse(Array("--0123456789abcdef0123456789abcdef\r\n\r\n".utf8))
        var chunk = [UInt8](repeating: 0x0D, count: 64 * 1024)
        chunk[chunk.count - 1] = 0x0A  // ends in CRLF: the matcher holds 2 bytes back
        var released = 0
        for round in 1...64 {
            for event in try parser.parse(chunk) {
                if case .bodyChunk(let bytes) = event { released += bytes.count }
            }
            #expect(released == round * chunk.count - 2)
        }
    }
}
