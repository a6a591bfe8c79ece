import CouchWire
import Foundation
import Testing

@Suite("Gzip")
struct GzipTests {
    private static func sample(_ count: Int, seed: UInt64, compressible: Bool) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        let words = Array("the quick brown fox jumps over the lazy dog ".utf8)
        return (0..<count).map { i in
            compressible ? words[i % words.count] : UInt8.random(in: 0...255, using: &generator)
        }
    }

    @Test(arguments: [0, 1, 100, 70_000, 1_000_000])
    func roundTrip(size: Int) throws {
        for compressible in [true, false] {
            let data = Self.sample(size, seed: UInt64(size), compressible: compressible)
            let packed = Gzip.compress(data)
            #expect(packed.starts(with: [0x1F, 0x8B, 0x08]))
            #expect(try Gzip.decompress(packed, limit: size) == data)
            if compressible && size > 1000 { #expect(packed.count < size / 10) }
        }
    }

    @Test func streamingEncoderAndDecoderInSmallChunks() throws {
        let data =
            Self.sample(300_000, seed: 5, compressible: true) + Self.sample(100_000, seed: 6, compressible: false)
        let encoder = GzipEncoder(level: 8)
        var packed: [UInt8] = []
        for start in stride(from: 0, to: data.count, by: 777) {
            packed += encoder.encode(Array(data[start..<min(data.count, start + 777)]))
        }
        packed += encoder.finish()
        let decoder = try GzipDecoder(limit: data.count)
        var out: [UInt8] = []
        for chunk in chunks(of: packed, .random(seed: 11, maxChunk: 97)) { out += try decoder.decode(Array(chunk)) }
        try decoder.finish()
        #expect(out == data && decoder.totalOut == data.count)
    }

    /// The encoder keeps one step buffer across calls: calls whose output spans several steps (level 0 of
    /// incompressible data), then tiny calls and `finish`, must still give exactly the data back.
    @Test func encoderReusesItsStepBufferAcrossCallsOfAnySize() throws {
        let data = Self.sample(200_000, seed: 7, compressible: false)
        let encoder = GzipEncoder(level: 0)
        var packed = encoder.encode(Array(data[0..<150_000]))
        #expect(packed.count >= 2 * 64 * 1024)  // two 64 KiB steps out of one call
        for start in stride(from: 150_000, to: data.count, by: 13) {
            packed += encoder.encode(Array(data[start..<min(data.count, start + 13)]))
        }
        packed += encoder.finish()
        #expect(try Gzip.decompress(packed, limit: data.count) == data)
    }

    @Test func decodesRealGzipAttachmentFromReplicator() throws {
        // album's notes.txt goes over the wire gzip-encoded (`Content-Encoding: gzip`).
        let put = try #require(try Transcripts.multipartPuts().first { $0.path.hasPrefix("/photos/album?") })
        let (_, boundary) = try MultipartBoundary.parse(contentType: try #require(put.requestHeaders["Content-Type"]))
        let parsed = try parseMultipart(put.requestBody, boundary: String(decoding: boundary, as: UTF8.self))
        let part = try #require(parsed.parts.first { $0.header("Content-Encoding") == "gzip" })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(parsed.parts[0].body)) as? [String: Any])
        let info = try #require((json["_attachments"] as? [String: [String: Any]])?["notes.txt"])
        let text = try Gzip.decompress(part.body, limit: 1 << 20)
        #expect(text.count == info["length"] as? Int)
        #expect(String(decoding: text, as: UTF8.self).hasPrefix("plain text"))
        // Byte at a time too.
        let decoder = try GzipDecoder(limit: 1 << 20)
        var out: [UInt8] = []
        for byte in part.body { out += try decoder.decode([byte]) }
        try decoder.finish()
        #expect(out == text)
    }

    @Test func concatenatedMembersDecodeAsOneStream() throws {
        let packed = Gzip.compress(Array("hello ".utf8)) + Gzip.compress(Array("world".utf8))
        #expect(try Gzip.decompress(packed, limit: 100) == Array("hello world".utf8))
    }

    @Test func refusesTruncatedInputAtEveryCut() throws {
        let packed = Gzip.compress(Self.sample(5000, seed: 1, compressible: false))
        for cut in 0..<packed.count {
            #expect(throws: GzipError.truncated, "cut \(cut)") {
                try Gzip.decompress(Array(packed.prefix(cut)), limit: 10_000)
            }
        }
    }

    @Test func refusesCorruptInput() throws {
        let packed = Gzip.compress(Self.sample(5000, seed: 2, compressible: true))
        var badMagic = packed
        badMagic[0] = 0x1E
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(badMagic, limit: 10_000) }
        var badCRC = packed
        badCRC[packed.count - 6] ^= 0xFF
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(badCRC, limit: 10_000) }
        var badLength = packed
        badLength[packed.count - 1] ^= 0x01
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(badLength, limit: 10_000) }
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(packed + [0, 0, 0], limit: 10_000) }
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(Array("{\"plain\":\"json\"}".utf8), limit: 10_000) }
    }

    @Test func unlimitedDecoderDoesNotOverflow() throws {
        let data = Array("an attachment".utf8)
        #expect(try GzipDecoder(limit: Int.max).decode(Gzip.compress(data)) == data)
    }

    @Test func stopsZipBombAtLimit() throws {
        // 64 MiB of zeros packs to about 64 KiB; the decoder must stop near the 1 MiB limit.
        let encoder = GzipEncoder(level: 9)
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var bomb: [UInt8] = []
        for _ in 0..<64 { bomb += encoder.encode(zeros) }
        bomb += encoder.finish()
        #expect(bomb.count < 100_000)
        let decoder = try GzipDecoder(limit: 1 << 20)
        var produced = 0
        #expect(throws: GzipError.limitExceeded(limit: 1 << 20)) {
            for chunk in chunks(of: bomb, .random(seed: 4, maxChunk: 4096)) {
                produced += try decoder.decode(Array(chunk)).count
            }
        }
        #expect(produced <= 1 << 20)
        #expect(decoder.totalOut <= (1 << 20) + 1)
        // And it stays failed.
        #expect(throws: GzipError.limitExceeded(limit: 1 << 20)) { try decoder.finish() }
        // Exactly at the limit is fine.
        #expect(try Gzip.decompress(Gzip.compress(zeros), limit: 1 << 20).count == 1 << 20)
    }
}
