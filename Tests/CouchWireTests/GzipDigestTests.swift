import CouchWire
import Testing

/// `GzipDigest` is the md5 of the gzip CouchDB 3.4.3 writes for a stored text attachment (zlib level 8, gzip
/// wrapper, memory level 8). Expected values from Python's zlib with the same settings:
/// `hashlib.md5(zlib.compressobj(8, zlib.DEFLATED, 31, 8) …)`, the settings checked against a real CouchDB's
/// digests (conformance `test_rev_of_text_like_attachments`).
@Suite struct GzipDigestTests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// 300,000 bytes of a fixed pattern: many deflate blocks and a full output buffer more than once.
    private let pattern: [UInt8] = (0..<300_000).map { UInt8(($0 * $0 + 7 * $0) % 251) }

    @Test func shortTextIsCouchDBsDigest() throws {
        #expect(hex(try GzipDigest.md5(of: Array("hello hello hello\n".utf8))) == "028a52d43ecca3fc236ebd5e8f1cbd90")
    }

    @Test func emptyInputIsTheDigestOfAnEmptyGzipStream() throws {
        #expect(hex(try GzipDigest.md5(of: [])) == "7029066c27ac6f5ef18d660d5741979a")
    }

    @Test func largeInputIsCouchDBsDigest() throws {
        #expect(hex(try GzipDigest.md5(of: pattern)) == "766cc215a8b3f27ae00a5e0e7a75b9d9")
    }

    @Test func howTheInputIsSplitDoesNotChangeTheDigest() throws {
        let whole = try GzipDigest.md5(of: pattern)
        for step in [7, 4096, 65_536, 131_071] {
            let digest = try GzipDigest()
            var offset = 0
            while offset < pattern.count {
                digest.update(Array(pattern[offset..<min(offset + step, pattern.count)]))
                offset += step
            }
            #expect(digest.finalize() == whole, "split every \(step) bytes")
        }
    }

    @Test func updatesAfterFinalizeAreIgnored() throws {
        let digest = try GzipDigest()
        digest.update(Array("abc".utf8))
        let first = digest.finalize()
        digest.update(Array("more".utf8))
        #expect(first == (try GzipDigest.md5(of: Array("abc".utf8))))
    }
}
