import CouchWire
import Foundation

/// The statistics CouchDB's `_stats` shows for a histogram, computed from its bin counts
/// (`LatencyHistogram`): each value stands for its bin's middle in the means and moments; percentiles are
/// interpolated inside the bin where their rank falls; `min` and `max` are the bounds of the first and last
/// non-empty bins.
struct HistogramSummary: Equatable {
    /// The percentiles CouchDB reports, in tenths of a percent where it writes `999` for 99.9.
    static let percentiles: [(label: Int, fraction: Double)] = [
        (50, 0.5), (75, 0.75), (90, 0.9), (95, 0.95), (99, 0.99), (999, 0.999),
    ]

    var n = 0
    var min = 0.0
    var max = 0.0
    var arithmeticMean = 0.0
    var geometricMean = 0.0
    var harmonicMean = 0.0
    var variance = 0.0
    var standardDeviation = 0.0
    var skewness = 0.0
    var kurtosis = 0.0
    /// One value per entry of `percentiles`.
    var percentileValues = [Double](repeating: 0, count: 6)

    var median: Double { percentileValues[0] }
    /// The sum of the values as the histogram knows them (bin middles), for Prometheus' `_sum`.
    var sum: Double { arithmeticMean * Double(n) }

    init() {}

    init(counts: [Int]) {
        let filled = counts.indices.filter { counts[$0] > 0 }
        guard let first = filled.first, let last = filled.last else { return }
        var sum = 0.0
        var logSum = 0.0
        var inverseSum = 0.0
        for bin in filled {
            let count = Double(counts[bin])
            let value = LatencyHistogram.middle(of: bin)
            n += counts[bin]
            sum += count * value
            logSum += count * Foundation.log(value)
            inverseSum += count / value
        }
        let total = Double(n)
        min = LatencyHistogram.lowerBound(of: first)
        max = LatencyHistogram.upperBound(of: last)
        arithmeticMean = sum / total
        geometricMean = exp(logSum / total)
        harmonicMean = total / inverseSum
        var moments = (second: 0.0, third: 0.0, fourth: 0.0)
        for bin in filled {
            let count = Double(counts[bin])
            let difference = LatencyHistogram.middle(of: bin) - arithmeticMean
            let squared = difference * difference
            moments.second += count * squared
            moments.third += count * squared * difference
            moments.fourth += count * squared * squared
        }
        variance = moments.second / total
        standardDeviation = variance.squareRoot()
        // A spread too small to divide by means no skew and no excess kurtosis.
        let cubed = standardDeviation * standardDeviation * standardDeviation
        skewness = cubed < 1e-12 ? 0 : moments.third / total / cubed
        let fourth = variance * variance
        kurtosis = fourth < 1e-12 ? 0 : moments.fourth / total / fourth - 3
        percentileValues = Self.percentiles.map { Self.interpolated(counts, filled, rank: total * $0.fraction) }
    }

    /// The value at `rank` (0 ..< n): the bin it falls in, and the fraction of the way through that bin.
    private static func interpolated(_ counts: [Int], _ filled: [Int], rank: Double) -> Double {
        var left = rank
        for bin in filled {
            let count = Double(counts[bin])
            if left < count {
                let low = LatencyHistogram.lowerBound(of: bin)
                return low + (LatencyHistogram.upperBound(of: bin) - low) * (left / count)
            }
            left -= count
        }
        return filled.last.map { LatencyHistogram.upperBound(of: $0) } ?? 0
    }

    /// CouchDB's `value` object of a histogram; an empty one is all integer zeros, as CouchDB writes it.
    package var json: JSON {
        guard n > 0 else {
            let zero = JSON.int(0)
            return .object(
                JSONObject(
                    [
                        "n", "min", "max", "arithmetic_mean", "geometric_mean", "harmonic_mean", "median", "variance",
                        "standard_deviation", "skewness", "kurtosis",
                    ].map { ($0, zero) }
                        + [
                            ("percentile", .array(Self.percentiles.map { .array([.int($0.label), zero]) })),
                            ("histogram", [[0, 0]]),
                        ]))
        }
        return .object(
            JSONObject([
                ("n", .int(n)), ("min", .double(min)), ("max", .double(max)),
                ("arithmetic_mean", .double(arithmeticMean)), ("geometric_mean", .double(geometricMean)),
                ("harmonic_mean", .double(harmonicMean)), ("median", .double(median)), ("variance", .double(variance)),
                ("standard_deviation", .double(standardDeviation)), ("skewness", .double(skewness)),
                ("kurtosis", .double(kurtosis)),
                (
                    "percentile",
                    .array(zip(Self.percentiles, percentileValues).map { .array([.int($0.label), .double($1)]) })
                ),
                ("histogram", [[0, 0]]),
            ]))
    }
}
