import Foundation
import Testing

@testable import PhotoDrop

/// The figures `push` and `replicate` draw (issue 36, item 4): a moving rate, an ETA only once a second of transfer
/// is measured and never an absurd one, sizes and clocks that stay readable whatever they are given.
@Suite struct ProgressDisplayTests {
    private func samples(_ points: [(Double, Int)]) -> [(time: Date, bytes: Int)] {
        let start = Date(timeIntervalSince1970: 1_000_000)
        return points.map { (start.addingTimeInterval($0.0), $0.1) }
    }

    @Test func theRateIsOverTheWindowNotSinceTheStart() throws {
        #expect(ProgressDisplay.rate(samples([])) == nil)
        #expect(ProgressDisplay.rate(samples([(0, 0), (0.1, 1_000_000)])) == nil)  // too short to say
        let early = try #require(ProgressDisplay.rate(samples([(0, 0), (0.5, 1_000_000)])))
        #expect(early.bytesPerSecond == 2_000_000 && !early.settled)
        let settled = try #require(ProgressDisplay.rate(samples([(10, 5_000_000), (12, 9_000_000)])))
        #expect(settled.bytesPerSecond == 2_000_000 && settled.settled)
        // Bytes that go backwards (a resumed file's offset) never make a negative rate.
        #expect(ProgressDisplay.rate(samples([(0, 9_000_000), (2, 1_000)]))?.bytesPerSecond == 0)
    }

    @Test func anETAOnlyOnceSettledAndNeverAbsurd() {
        func line(_ rate: (Double, Bool)?, bytes: Int = 1_000_000, total: Int = 300_000_000) -> String {
            ProgressDisplay.figures(
                done: 1, total: 60, bytes: bytes, totalBytes: total, noun: "photos", final: false, elapsed: 7,
                rate: rate.map { (bytesPerSecond: $0.0, settled: $0.1) })
        }
        #expect(line(nil).hasSuffix("-- B/s  ETA --:--"))
        #expect(line((2_000_000, false)).hasSuffix("2.0 MB/s  ETA --:--"))  // a rate, but not yet an ETA
        #expect(line((2_000_000, true)).hasSuffix("2.0 MB/s  ETA 2:30"))
        // 300 MB at 3 bytes a second: more than two days, not printed as 27777:46:40.
        #expect(line((3, true)).hasSuffix("ETA --:--"))
        #expect(line((0, true)).hasSuffix("ETA --:--"))
        #expect(line((2_000_000, true), bytes: 300_000_000).hasSuffix("ETA 0:00"))
        #expect(line((2_000_000, true)).hasPrefix("1/60 photos  1.0 MB/300.0 MB"))
    }

    @Test func aReplicationsUnknownTotalsShowWhatIsDone() {
        let text = ProgressDisplay.figures(
            done: 1_200, total: -1, bytes: 45_200_000, totalBytes: -1, noun: "documents", final: false, elapsed: 9,
            rate: (bytesPerSecond: 3_100_000, settled: true))
        #expect(text == "1200 documents  45.2 MB  3.1 MB/s")
        let final = ProgressDisplay.figures(
            done: 20, total: 20, bytes: 20_000_000, totalBytes: 20_000_000, noun: "photos", final: true, elapsed: 61,
            rate: (bytesPerSecond: 327_000, settled: true))
        #expect(final == "20/20 photos  20.0 MB/20.0 MB  327.0 kB/s  in 1:01")
    }

    @Test func sizesAndClocksOfHostileValues() {
        #expect(ProgressDisplay.size(0) == "0 B" && ProgressDisplay.size(999) == "999 B")
        #expect(ProgressDisplay.size(1_500) == "1.5 kB" && ProgressDisplay.size(2_340_000_000) == "2.34 GB")
        #expect(ProgressDisplay.clock(.nan) == "--:--" && ProgressDisplay.clock(-5) == "--:--")
        #expect(ProgressDisplay.clock(.infinity) == "--:--")
        #expect(ProgressDisplay.clock(59.6) == "1:00" && ProgressDisplay.clock(3_600) == "1:00:00")
        #expect(ProgressDisplay.clock(1e300).hasSuffix(":40"))  // clamped, not a trap
        #expect(ProgressDisplay.fraction(done: 5, total: 0, bytes: -3, totalBytes: 0) == 1)
        #expect(ProgressDisplay.fraction(done: 0, total: 10, bytes: 20, totalBytes: 10) == 1)
    }

    /// A display shown 20,000 times (a long push) keeps a bounded window of samples: its lines stay a steady cost.
    @Test func twentyThousandShowsKeepTheWindowSmall() {
        let display = ProgressDisplay(isTerminal: false, lineInterval: .infinity)
        let start = Date()
        for n in 0..<20_000 {
            display.show(
                photos: n / 100, of: 200, bytes: n * 1_000, of: 20_000_000,
                now: start.addingTimeInterval(Double(n) / 100))
        }
        #expect(display.sampleCount <= 520)  // five seconds at 100 shows a second, and one before
    }
}
