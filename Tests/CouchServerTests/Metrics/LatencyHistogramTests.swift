import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// The request-time histogram: bins, the sliding window, concurrent writers, and the statistics
/// `_stats` shows (`HistogramSummary`).
@Suite struct LatencyHistogramTests {
    @Test func binsCoverTheRangeWithCouchDBsCount() {
        #expect(LatencyHistogram.binCount == 230)
        #expect(LatencyHistogram.bin(of: 0.01) == 0)
        #expect(LatencyHistogram.bin(of: 4_000_000) == LatencyHistogram.binCount - 1)
    }

    @Test func everyValueLiesInItsBinAndBinsAreAtMostAnEighthWide() {
        var value = 0.01
        while value < 4_000_000 {
            let bin = LatencyHistogram.bin(of: value)
            #expect(LatencyHistogram.lowerBound(of: bin) <= value)
            #expect(value <= LatencyHistogram.upperBound(of: bin))
            let low = LatencyHistogram.lowerBound(of: bin)
            #expect((LatencyHistogram.upperBound(of: bin) - low) / low <= 0.125 + 1e-12)
            #expect(low < LatencyHistogram.middle(of: bin) && LatencyHistogram.middle(of: bin) < value * 1.125 + 1e-9)
            value *= 1.07
        }
    }

    @Test func hostileValuesAreClampedIntoTheEndBins() {
        for value in [0, -1, -Double.infinity, .nan, 1e-300, -0.0] {
            #expect(LatencyHistogram.bin(of: value) == 0, "\(value)")
        }
        for value in [4e6, 1e300, .infinity, .greatestFiniteMagnitude] {
            #expect(LatencyHistogram.bin(of: value) == LatencyHistogram.binCount - 1, "\(value)")
        }
        let histogram = LatencyHistogram(window: 10)
        for value in [Double.nan, -5, .infinity, 0] { histogram.record(value, second: 100) }
        let summary = histogram.summary(second: 100)
        #expect(summary.n == 4)
        #expect(summary.min == LatencyHistogram.lowerBound(of: 0))
        #expect(summary.max == LatencyHistogram.upperBound(of: LatencyHistogram.binCount - 1))
        #expect(summary.arithmeticMean.isFinite && summary.variance.isFinite && summary.kurtosis.isFinite)
    }

    @Test func theWindowForgetsOldSeconds() {
        let histogram = LatencyHistogram(window: 10)
        histogram.record(5, second: 1000)
        histogram.record(7, second: 1005)
        #expect(histogram.summary(second: 1005).n == 2)
        #expect(histogram.summary(second: 1009).n == 2)
        #expect(histogram.summary(second: 1010).n == 1)  // 1000 is out of 1001…1010
        #expect(histogram.summary(second: 1015).n == 0)
        // A row reused many windows later starts from zero.
        histogram.record(9, second: 1000 + 12 * 50)
        #expect(histogram.summary(second: 1000 + 12 * 50).n == 1)
        #expect(histogram.summary(second: 1000 + 12 * 50 + 9).n == 1)
    }

    @Test func aReadingNeverCountsARowLeftFromAnEarlierLap() {
        let histogram = LatencyHistogram(window: 3)
        // Five rows in the ring: second 0 and second 5 share one.
        histogram.record(1, second: 0)
        #expect(histogram.summary(second: 5).n == 0)
        #expect(histogram.summary(second: 2).n == 1)
    }

    @Test func concurrentWritersLoseNothingWithinASecond() async {
        let histogram = LatencyHistogram(window: 10)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in 0..<5_000 { histogram.record(Double(1 + (index + worker) % 500), second: 42) }
                }
            }
        }
        #expect(histogram.summary(second: 42).n == 40_000)
    }

    @Test func concurrentWritersAcrossSecondsStillLandInTheWindow() async {
        let histogram = LatencyHistogram(window: 10)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for index in 0..<4_000 { histogram.record(3, second: 200 + (index + worker * 7) / 1_000) }
                }
            }
        }
        // Seconds 200…204 are each claimed (zeroed) once, by their first writer, before anyone adds to them.
        #expect(histogram.summary(second: 204).n == 16_000)
    }

    @Test func summaryOfKnownValues() {
        var counts = [Int](repeating: 0, count: LatencyHistogram.binCount)
        let values = [0.05, 0.9, 0.7, 0.7, 10.1, 11, 100.5, 0.10, 13.5]
        for value in values { counts[LatencyHistogram.bin(of: value)] += 1 }
        let summary = HistogramSummary(counts: counts)
        #expect(summary.n == values.count)
        #expect(summary.min <= 0.05 && summary.min > 0.05 / 1.125)
        #expect(summary.max >= 100.5 && summary.max < 100.5 * 1.125)
        let mean = values.reduce(0, +) / Double(values.count)
        #expect(abs(summary.arithmeticMean - mean) / mean < 0.125)
        #expect(summary.harmonicMean < summary.geometricMean && summary.geometricMean < summary.arithmeticMean)
        // The median of the nine is 0.9: it lies in 0.9's bin.
        let medianBin = LatencyHistogram.bin(of: 0.9)
        #expect(LatencyHistogram.lowerBound(of: medianBin) <= summary.median)
        #expect(summary.median <= LatencyHistogram.upperBound(of: medianBin))
        #expect(summary.percentileValues == summary.percentileValues.sorted())
        #expect(summary.skewness > 0)  // a long tail to the right
        #expect(summary.standardDeviation == summary.variance.squareRoot())
        #expect(abs(summary.sum - summary.arithmeticMean * 9) < 1e-9)
    }

    @Test func percentilesInterpolateInsideTheBin() {
        var counts = [Int](repeating: 0, count: LatencyHistogram.binCount)
        let bin = LatencyHistogram.bin(of: 10)
        counts[bin] = 1000
        let summary = HistogramSummary(counts: counts)
        let low = LatencyHistogram.lowerBound(of: bin)
        let width = LatencyHistogram.upperBound(of: bin) - low
        #expect(abs(summary.median - (low + width * 0.5)) < 1e-9)
        #expect(abs(summary.percentileValues[5] - (low + width * 0.999)) < 1e-9)
        // One bin: no spread to divide by.
        #expect(summary.skewness == 0 && summary.kurtosis == 0)
    }

    @Test func emptySummaryIsCouchDBsZeroObject() {
        let json = HistogramSummary(counts: [Int](repeating: 0, count: LatencyHistogram.binCount)).json
        #expect(
            json.serializedString
                == #"{"n":0,"min":0,"max":0,"arithmetic_mean":0,"geometric_mean":0,"harmonic_mean":0,"median":0,"#
                + #""variance":0,"standard_deviation":0,"skewness":0,"kurtosis":0,"#
                + #""percentile":[[50,0],[75,0],[90,0],[95,0],[99,0],[999,0]],"histogram":[[0,0]]}"#)
    }

    @Test func summaryJSONHasCouchDBsKeysInOrder() {
        var counts = [Int](repeating: 0, count: LatencyHistogram.binCount)
        counts[LatencyHistogram.bin(of: 3)] = 2
        guard case .object(let object) = HistogramSummary(counts: counts).json else {
            Issue.record("not an object")
            return
        }
        #expect(
            object.keys == [
                "n", "min", "max", "arithmetic_mean", "geometric_mean", "harmonic_mean", "median", "variance",
                "standard_deviation", "skewness", "kurtosis", "percentile", "histogram",
            ])
        #expect(object["n"] == .int(2))
    }
}
