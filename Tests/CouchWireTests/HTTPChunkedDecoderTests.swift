import Testing

@testable import CouchWire

private struct Decoded: Equatable {
    var data: [UInt8]
    var finished: Bool
    var consumed: Int
}

/// Decodes `bytes` whole and one byte at a time; both must agree.
private func decode(_ text: String) -> Result<Decoded, HTTPParseError> {
    let bytes = Array(text.utf8)
    let whole = decodeOnce(bytes, byteAtATime: false)
    let perByte = decodeOnce(bytes, byteAtATime: true)
    #expect("\(whole)" == "\(perByte)", "whole and per-byte decodes differ")
    return whole
}

private func decodeOnce(_ bytes: [UInt8], byteAtATime: Bool) -> Result<Decoded, HTTPParseError> {
    var decoder = HTTPChunkedDecoder()
    var result = Decoded(data: [], finished: false, consumed: 0)
    let pieces: [ArraySlice<UInt8>] = byteAtATime ? bytes.indices.map { bytes[$0...$0] } : [bytes[...]]
    do {
        for piece in pieces {
            var rest = piece
            while !rest.isEmpty {
                let step = try rest.withUnsafeBytes { raw throws(HTTPParseError) in try decoder.decode(raw) }
                switch step {
                case .needMoreData:
                    result.consumed += rest.count
                    rest = []
                case .data(let range):
                    let start = rest.startIndex
                    result.data += rest[(start + range.lowerBound)..<(start + range.upperBound)]
                    result.consumed += range.upperBound
                    rest = rest[(start + range.upperBound)...]
                case .end(let consumed):
                    result.consumed += consumed
                    result.finished = true
                    return .success(result)
                }
            }
        }
    } catch {
        return .failure(error as? HTTPParseError ?? .malformed("unexpected \(error)"))
    }
    return .success(result)
}

private func isMalformed(_ text: String) -> Bool {
    if case .failure(.malformed) = decode(text) { return true }
    return false
}

@Suite struct HTTPChunkedDecoderTests {
    @Test func decodesChunks() throws {
        let decoded = try decode("5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n").get()
        #expect(String(decoding: decoded.data, as: UTF8.self) == "hello, world")
        #expect(decoded.finished)
    }

    @Test func hexSizesAreCaseInsensitive() throws {
        let body = String(repeating: "x", count: 26)
        #expect(try decode("1a\r\n\(body)\r\n0\r\n\r\n").get().data.count == 26)
        #expect(try decode("1A\r\n\(body)\r\n0\r\n\r\n").get().data.count == 26)
        #expect(try decode("001A\r\n\(body)\r\n0\r\n\r\n").get().data.count == 26)
    }

    @Test func extensionsAndTrailersAreSkipped() throws {
        let decoded = try decode("3;name=value\r\nabc\r\n0;last\r\nX-Trailer: 1\r\nX-Other: 2\r\n\r\n").get()
        #expect(decoded.data == Array("abc".utf8))
        #expect(decoded.finished)
    }

    @Test func bytesAfterTheEndAreNotConsumed() throws {
        let body = "2\r\nok\r\n0\r\n\r\n"
        let decoded = try decode(body + "GET / HTTP/1.1\r\n\r\n").get()
        #expect(decoded.consumed == body.utf8.count)
    }

    @Test func truncatedChunkIsNotFinished() throws {
        let decoded = try decode("a\r\nhello").get()
        #expect(!decoded.finished)
        #expect(decoded.data == Array("hello".utf8))
        #expect(try !decode("5\r\nhello\r\n").get().finished)
        #expect(try !decode("5\r\nhello\r\n0\r\n").get().finished)
    }

    @Test func badChunkSizeIsRejected() {
        #expect(isMalformed("xyz\r\nabc\r\n0\r\n\r\n"))
        #expect(isMalformed("\r\nabc\r\n0\r\n\r\n"))
        #expect(isMalformed("-5\r\nhello\r\n0\r\n\r\n"))
        #expect(isMalformed("0x5\r\nhello\r\n0\r\n\r\n"))
        #expect(isMalformed(";ext\r\nhello\r\n0\r\n\r\n"))
    }

    @Test func chunkSizeOverflowWith17HexDigitsIsRejected() throws {
        #expect(isMalformed("10000000000000000\r\n"))
        #expect(isMalformed("00000000000000005\r\nhello\r\n0\r\n\r\n"))
        // Sixteen digits is the limit and still accepted.
        #expect(try !decode("ffffffffffffffff\r\nabc").get().finished)
    }

    @Test func missingCRLFAfterChunkDataIsRejected() {
        #expect(isMalformed("5\r\nhelloX\r\n0\r\n\r\n"))
        #expect(isMalformed("5\r\nhello\rX0\r\n\r\n"))
    }

    @Test func bareLineFeedsAreRejected() {
        #expect(isMalformed("5\nhello\r\n0\r\n\r\n"))
        #expect(isMalformed("5\r\nhello\n0\r\n\r\n"))
        #expect(isMalformed("5\r\nhello\r\n0\r\n\n"))
        #expect(isMalformed("5\r\nhello\r\n0\r\nX-T: 1\n\r\n"))
    }

    @Test func overlongChunkExtensionIsRejected() {
        let ext = String(repeating: "e", count: HTTPLimits.maxChunkExtensionBytes + 1)
        #expect(isMalformed("5;\(ext)\r\nhello\r\n0\r\n\r\n"))
    }

    @Test func oversizedTrailersAreRejected() {
        let trailer = "X-T: " + String(repeating: "t", count: HTTPLimits.maxHeaderBlockBytes) + "\r\n"
        guard case .failure(let error) = decode("0\r\n\(trailer)\r\n") else {
            Issue.record("expected an error")
            return
        }
        #expect(error == .headerBlockTooLarge)
    }
}
