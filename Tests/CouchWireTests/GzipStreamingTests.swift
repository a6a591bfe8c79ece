import CouchWire
import Testing

/// Attack: a gzip bomb (a few hundred KiB that inflate to hundreds of MiB) must be decodable without
/// ever holding the inflated bytes: the sink API hands them out in steps of at most 64 KiB.
@Suite struct GzipStreamingTests {
    /// `mib` MiB of zeros, gzip-compressed in pieces (about 1 KiB per MiB).
    static func bomb(mib: Int) -> [UInt8] {
        let encoder = GzipEncoder(level: 9)
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var out: [UInt8] = []
        for _ in 0..<mib { out += encoder.encode(zeros) }
        return out + encoder.finish()
    }

    @Test func test_gzip_bomb_decodes_in_bounded_steps() throws {
        let bomb = GzipStreamingTests.bomb(mib: 64)
        #expect(bomb.count < 200 * 1024)
        let decoder = try GzipDecoder(limit: 1 << 30)
        var total = 0
        var largestStep = 0
        var allZero = true
        // One call with the whole input: the old array API returned all 64 MiB from it at once.
        try bomb.withUnsafeBytes { input in
            try decoder.decode(input) { step in
                total += step.count
                largestStep = max(largestStep, step.count)
                if allZero, step.contains(where: { $0 != 0 }) { allZero = false }
            }
        }
        try decoder.finish()
        #expect(total == 64 << 20)
        #expect(decoder.totalOut == total)
        #expect(largestStep <= 64 * 1024)
        #expect(allZero)
    }

    @Test func bombPastTheLimitStopsBeforeTheSinkSeesTooMuch() throws {
        let bomb = GzipStreamingTests.bomb(mib: 8)
        let decoder = try GzipDecoder(limit: 1 << 20)
        var delivered = 0
        #expect(throws: GzipError.limitExceeded(limit: 1 << 20)) {
            try bomb.withUnsafeBytes { input in try decoder.decode(input) { delivered += $0.count } }
        }
        #expect(delivered <= 1 << 20)
        // The decoder refuses further input after a failure.
        #expect(throws: GzipError.limitExceeded(limit: 1 << 20)) { try decoder.finish() }
    }

    struct SinkFailed: Error, Equatable {}

    @Test func sinkErrorsPropagateAndStopTheDecoder() throws {
        let bomb = GzipStreamingTests.bomb(mib: 2)
        let decoder = try GzipDecoder(limit: 1 << 30)
        var calls = 0
        #expect(throws: SinkFailed()) {
            try bomb.withUnsafeBytes { input in
                try decoder.decode(input) { _ in
                    calls += 1
                    if calls == 3 { throw SinkFailed() }
                }
            }
        }
        #expect(calls == 3)
        #expect(throws: (any Error).self) { try decoder.finish() }
    }
}
