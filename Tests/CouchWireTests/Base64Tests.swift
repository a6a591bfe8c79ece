import CouchWire
import Testing

@Suite struct Base64Tests {
    /// RFC 4648 §10 test vectors.
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test func encodesRFC4648Vectors() {
        for (plain, encoded) in Base64Tests.vectors {
            #expect(Base64.encodedString(Array(plain.utf8)) == encoded)
        }
    }

    @Test func decodesRFC4648Vectors() {
        for (plain, encoded) in Base64Tests.vectors {
            #expect(Base64.decode(encoded) == Array(plain.utf8))
            #expect(Base64.decode(Array(encoded.utf8)) == Array(plain.utf8))
            #expect(Base64.decode(Array(encoded.utf8)[...]) == Array(plain.utf8))
        }
    }

    @Test func allByteValuesRoundTrip() {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 3) }
        for length in 0...bytes.count where length % 37 == 0 || length < 10 {
            var encoded: [UInt8] = []
            Base64.encode(Array(bytes[..<length]), into: &encoded)
            #expect(encoded.count == Base64.encodedCount(length))
            #expect(Base64.decode(encoded) == Array(bytes[..<length]))
        }
        #expect(Base64.encodedString([0xFB, 0xFF, 0xBF]) == "+/+/")
    }

    @Test func whitespaceIsSkippedLikeErlang() {
        #expect(Base64.decode("Zm9v\r\nYmFy") == Array("foobar".utf8))
        #expect(Base64.decode(" Zm 9v\tYg= = ") == Array("foob".utf8))
    }

    @Test(arguments: [
        "Zm9", "Zg", "Zg=", "Z===", "=", "====", "Zm9v=", "Zg==Zg==", "Zg=a", "Zm9v!A==", "Zm-v", "Zm_v",
        "Zm9vYmFy\u{0}", "Zm9vYmF\u{E9}",
    ])
    func malformedTextIsRejected(text: String) {
        #expect(Base64.decode(text) == nil)
    }

    @Test func nonZeroTrailingBitsAreAcceptedLikeErlang() {
        #expect(Base64.decode("Zh==") == [0x66])
    }

    @Test func streamingEqualsOneShotAtEveryChunkBoundary() {
        let bytes = (0..<50).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
        var expected: [UInt8] = []
        Base64.encode(bytes, into: &expected)
        // Two chunks split at every offset.
        for split in 0...bytes.count {
            var encoder = Base64Encoder()
            var output: [UInt8] = []
            encoder.update(Array(bytes[..<split]), into: &output)
            encoder.update(Array(bytes[split...]), into: &output)
            encoder.finish(into: &output)
            #expect(output == expected, "split at \(split)")
        }
        // Uniform chunk sizes, including one byte at a time and empty chunks.
        for size in 1...7 {
            var encoder = Base64Encoder()
            var output: [UInt8] = []
            var start = 0
            while start < bytes.count {
                encoder.update([], into: &output)
                encoder.update(Array(bytes[start..<min(start + size, bytes.count)]), into: &output)
                start += size
            }
            encoder.finish(into: &output)
            #expect(output == expected, "chunk size \(size)")
            // Output so far is always whole quanta until finish.
            #expect(output.count % 4 == 0)
        }
    }

    @Test func streamingEmitsOnlyCompleteGroupsBeforeFinish() {
        var encoder = Base64Encoder()
        var output: [UInt8] = []
        encoder.update([0x66, 0x6F], into: &output)
        #expect(output.isEmpty)
        encoder.update([0x6F, 0x62], into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "Zm9v")
        encoder.finish(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "Zm9vYg==")
        // Reusable after finish.
        encoder.finish(into: &output)
        #expect(String(decoding: output, as: UTF8.self) == "Zm9vYg==")
    }

    @Test func randomTextNeverCrashesTheDecoder() {
        var random = SeededGenerator(seed: 7)
        let alphabet = Array("ABCZabcz019+/= \n-_!".utf8)
        var decoded = 0
        for _ in 0..<5000 {
            let text = (0..<Int.random(in: 0..<16, using: &random)).map { _ in
                alphabet.randomElement(using: &random) ?? 0
            }
            if let bytes = Base64.decode(text) {
                decoded += 1
                var again: [UInt8] = []
                Base64.encode(bytes, into: &again)
                #expect(again.count == Base64.encodedCount(bytes.count))
            }
        }
        #expect(decoded > 0)
    }

    /// Found profiling the `base64` fuzz target: `encode` reserved exactly `count + needed` on every call, and
    /// `reserveCapacity` allocates exactly that, so a stream of small pieces copied the whole output on every piece
    /// (quadratic). Appending must grow the buffer geometrically, like `append` does.
    @Test func streamingIntoOneBufferGrowsItGeometrically() {
        var encoder = Base64Encoder()
        var output: [UInt8] = []
        var capacities = Set<Int>()
        let piece: [UInt8] = [1, 2, 3]
        for _ in 0..<4096 {
            encoder.update(piece, into: &output)
            capacities.insert(output.capacity)
        }
        #expect(output.count == 4096 * 4)
        // Doubling from 4 to 16 KiB is 13 sizes; exact reservations were 4,096.
        #expect(capacities.count < 40, "\(capacities.count) reallocations for 4,096 pieces")
    }
}
