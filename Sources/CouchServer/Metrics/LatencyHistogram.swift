import Synchronization

/// CouchDB's request-time histogram: values (milliseconds) counted in base-2 bins over a sliding window of
/// the last `window` seconds, so `_stats` shows recent latency rather than an average since start.
///
/// A bin is chosen by the float's exponent and its 3 most significant mantissa bits (8 bins per power of
/// two), over 0.01 ms … 4,000,000 ms (smaller and larger values land in the first and last bin): 230 bins,
/// each within 12.5 % of its values. One row of bins per second, in a ring of `window + 2` rows; a row
/// is zeroed by the first writer of a new second, so recording is two relaxed atomic adds and no lock.
/// A reading sums the rows of the last `window` seconds (a row whose second is stale is skipped).
final class LatencyHistogram: Sendable {
    static let minimumValue = 0.01
    static let maximumValue = 4_000_000.0
    /// Bits of the float kept after the sign: 11 of exponent, 3 of mantissa.
    private static let droppedBits: UInt64 = 49
    private static let firstKey = Int(minimumValue.bitPattern >> droppedBits)
    static let binCount = Int(maximumValue.bitPattern >> droppedBits) - firstKey + 1

    let window: Int
    private let rows: Int
    private let bins: AtomicCounters
    /// The second each row holds, or -1 while a writer zeroes it.
    private let rowSeconds: AtomicCounters

    init(window: Int = 10) {
        self.window = max(1, window)
        rows = self.window + 2
        bins = AtomicCounters(count: rows * Self.binCount)
        rowSeconds = AtomicCounters(count: rows)
        for row in 0..<rows { rowSeconds.store(row, Int.min) }
    }

    /// The bin of a value (clamped to the histogram's range; NaN counts as the smallest).
    static func bin(of value: Double) -> Int {
        let clamped = value.isNaN ? minimumValue : min(max(value, minimumValue), maximumValue)
        return Int(clamped.bitPattern >> droppedBits) - firstKey
    }

    /// The smallest value of a bin.
    static func lowerBound(of bin: Int) -> Double {
        Double(bitPattern: UInt64(bin + firstKey) << droppedBits)
    }

    /// The largest value of a bin.
    static func upperBound(of bin: Int) -> Double {
        Double(bitPattern: (UInt64(bin + firstKey) << droppedBits) | ((1 << droppedBits) - 1))
    }

    /// The value a bin stands for in means and moments: its middle (in the float's bits).
    static func middle(of bin: Int) -> Double {
        Double(bitPattern: (UInt64(bin + firstKey) << droppedBits) | (1 << (droppedBits - 1)))
    }

    /// Counts `value` in the row of `second` (a monotonic clock's whole seconds).
    func record(_ value: Double, second: Int) {
        let row = Self.row(second, rows)
        if rowSeconds[row] != second { claim(row, for: second) }
        bins.add(row * Self.binCount + Self.bin(of: value))
    }

    /// Zeroes a row for a new second; concurrent writers of that second wait the few microseconds it takes.
    private func claim(_ row: Int, for second: Int) {
        for _ in 0..<10_000 {
            let held = rowSeconds[row]
            if held == second { return }
            if held == -1 { continue }
            // An older second (or a stalled writer's newer one: it will be counted as well as it can).
            if held > second { return }
            if rowSeconds.compareExchange(row, expected: held, desired: -1) {
                for bin in 0..<Self.binCount { bins.store(row * Self.binCount + bin, 0) }
                rowSeconds.store(row, second)
                return
            }
        }
    }

    /// Counts per bin over the `window` seconds ending with `second`.
    func counts(second: Int) -> [Int] {
        var total = [Int](repeating: 0, count: Self.binCount)
        for past in (second - window + 1)...second {
            let row = Self.row(past, rows)
            guard rowSeconds[row] == past else { continue }
            for bin in 0..<Self.binCount { total[bin] += bins[row * Self.binCount + bin] }
        }
        return total
    }

    func summary(second: Int) -> HistogramSummary { HistogramSummary(counts: counts(second: second)) }

    private static func row(_ second: Int, _ rows: Int) -> Int { ((second % rows) + rows) % rows }
}
