import CouchServer
import Foundation
import Synchronization

/// Progress of a push or a replication on stderr: a bar redrawn in place on a terminal, plain lines (at most one
/// every `lineInterval`) when stderr is a pipe or a file.
///
/// The rate is a moving one, over the last `window` of the transfer (not since the command started, which counted
/// the scan and the time before the first byte: a first ETA of eleven hours for two minutes of work), and an ETA is
/// shown only once a second of transfer has been measured, and never past `maxETA` ("--:--" instead).
package final class ProgressDisplay: Sendable {
    let isTerminal: Bool
    /// Seconds between two plain lines.
    let lineInterval: TimeInterval
    /// Seconds from the first `show` before anything is drawn (a quick replication prints no progress at all).
    let quietFor: TimeInterval
    /// How far back the rate looks.
    static let window: TimeInterval = 5
    /// The longest ETA worth printing.
    static let maxETA: TimeInterval = 48 * 3600

    private struct State {
        var started: Date?
        var lastLine = Date.distantPast
        var drewBar = false
        /// Whether anything was drawn yet.
        var shown = false
        /// (time, bytes) of recent `show` calls, oldest first, spanning at most `window` (plus one before it).
        var samples: [(time: Date, bytes: Int)] = []
    }

    private let state = Mutex(State())

    package init(
        isTerminal: Bool = isatty(STDERR_FILENO) == 1, lineInterval: TimeInterval = 1, quietFor: TimeInterval = 0
    ) {
        self.isTerminal = isTerminal
        self.lineInterval = lineInterval
        self.quietFor = quietFor
    }

    /// Whether any progress was drawn (a quiet display's final line follows only those that were).
    package var hasShown: Bool { state.withLock { $0.shown } }

    /// Shows `done`/`total` photos and bytes (`noun`: what is counted); `final` always prints (and ends the bar's
    /// line). `now` is for tests.
    package func show(
        photos done: Int, of total: Int, bytes: Int, of totalBytes: Int, noun: String = "photos", final: Bool = false,
        now: Date = Date()
    ) {
        let text = state.withLock { state -> String? in
            let started = state.started ?? now
            state.started = started
            state.samples.append((now, bytes))
            while state.samples.count > 2, now.timeIntervalSince(state.samples[1].time) >= Self.window {
                state.samples.removeFirst()
            }
            if !final && !isTerminal && now.timeIntervalSince(state.lastLine) < lineInterval { return nil }
            if !final && now.timeIntervalSince(started) < quietFor { return nil }
            state.lastLine = now
            state.shown = true
            let elapsed = now.timeIntervalSince(started)
            // A final line gives the average over the whole transfer.
            let average = elapsed >= 0.25 ? (bytesPerSecond: Double(bytes) / elapsed, settled: true) : nil
            let figures = Self.figures(
                done: done, total: total, bytes: bytes, totalBytes: totalBytes, noun: noun, final: final,
                elapsed: elapsed, rate: final ? average : Self.rate(state.samples))
            guard isTerminal else { return Self.linePrefix(noun) + figures + "\n" }
            state.drewBar = !final
            // No bar for a total not known (a replication's): the figures alone, redrawn.
            guard total >= 0 else { return "\r\u{1B}[2K" + Self.linePrefix(noun) + figures + (final ? "\n" : "") }
            let fraction = Self.fraction(done: done, total: total, bytes: bytes, totalBytes: totalBytes)
            let width = 24
            let filled = max(0, min(width, Int(fraction * Double(width))))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            return "\r\u{1B}[2K[\(bar)] \(Int(fraction * 100))%  " + figures + (final ? "\n" : "")
        }
        if let text { write(text) }
    }

    /// The samples the rate is read from (bounded by `window`).
    var sampleCount: Int { state.withLock { $0.samples.count } }

    /// A message on a line of its own (ends a bar in progress first).
    package func message(_ text: String) {
        let endBar = state.withLock { state in
            defer { state.drewBar = false }
            return state.drewBar
        }
        write((endBar ? "\n" : "") + text + "\n")
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    private static func linePrefix(_ noun: String) -> String { noun == "photos" ? "push: " : "replicate: " }

    /// Bytes per second over the samples, and whether they span the second an ETA needs (nil before a quarter of
    /// a second of them).
    static func rate(_ samples: [(time: Date, bytes: Int)]) -> (bytesPerSecond: Double, settled: Bool)? {
        guard let first = samples.first, let last = samples.last else { return nil }
        let span = last.time.timeIntervalSince(first.time)
        guard span >= 0.25 else { return nil }
        return (Double(max(0, last.bytes - first.bytes)) / span, span >= 1)
    }

    static func fraction(done: Int, total: Int, bytes: Int, totalBytes: Int) -> Double {
        if totalBytes > 0 { return min(1, Double(max(0, bytes)) / Double(totalBytes)) }
        return total > 0 ? min(1, Double(max(0, done)) / Double(total)) : 1
    }

    /// `12/60 photos  14.4 MB/323.3 MB  5.1 MB/s  ETA 1:02` (or `… 5.0 MB/s  in 1:40` when `final`, with the
    /// average rate). A total below zero is unknown (a replication's): then only what is done is shown.
    static func figures(
        done: Int, total: Int, bytes: Int, totalBytes: Int, noun: String, final: Bool, elapsed: TimeInterval,
        rate: (bytesPerSecond: Double, settled: Bool)?
    ) -> String {
        let counted = total >= 0 ? "\(done)/\(total) \(noun)" : "\(done) \(noun)"
        let sizes = totalBytes >= 0 ? "\(size(bytes))/\(size(totalBytes))" : size(bytes)
        let speed = rate.map { "\(size(Int(clampingRate: $0.bytesPerSecond)))/s" } ?? "-- B/s"
        if final { return "\(counted)  \(sizes)  \(speed)  in \(clock(elapsed))" }
        guard totalBytes >= 0 else { return "\(counted)  \(sizes)  \(speed)" }
        var eta = "--:--"
        if let rate, rate.settled, rate.bytesPerSecond > 0, totalBytes > bytes {
            let seconds = Double(totalBytes - bytes) / rate.bytesPerSecond
            if seconds <= maxETA { eta = clock(seconds) }
        }
        if totalBytes <= bytes { eta = clock(0) }
        return "\(counted)  \(sizes)  \(speed)  ETA \(eta)"
    }

    package static func size(_ bytes: Int) -> String {
        let value = Double(bytes)
        if value >= 1e9 { return String(format: "%.2f GB", value / 1e9) }
        if value >= 1e6 { return String(format: "%.1f MB", value / 1e6) }
        if value >= 1e3 { return String(format: "%.1f kB", value / 1e3) }
        return "\(bytes) B"
    }

    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "--:--" }
        let total = Int(min(seconds, 1e9).rounded())
        return total >= 3600
            ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }
}

/// What a push has put on the peer so far, counted by whichever thread sends it and read by the one that shows it.
package final class PushTally: Sendable {
    /// Files the peer has whole.
    package let files = Atomic<Int>(0)
    /// Their bytes.
    let completedBytes = Atomic<Int>(0)
    /// The file being sent, and the bytes of it the peer has (its offset).
    private let current = Mutex<(name: String, bytes: Int)?>(nil)
    /// Set by the first Ctrl-C: sending stops at the next piece, keeping what arrived.
    package let interrupted = Atomic<Bool>(false)

    package init() {}

    package var bytes: Int {
        let (sum, overflow) = completedBytes.load(ordering: .relaxed).addingReportingOverflow(
            current.withLock { $0?.bytes } ?? 0)
        return overflow ? Int.max : sum
    }

    /// The file in flight and how much of it the peer has, if one is.
    package var partial: (name: String, bytes: Int)? { current.withLock { $0 } }

    func starting(_ name: String, at offset: Int) { current.withLock { $0 = (name, offset) } }

    func sent(_ count: Int) {
        current.withLock {
            if let bytes = $0?.bytes {
                $0?.bytes = bytes.addingReportingOverflow(count).overflow ? Int.max : bytes + count
            }
        }
    }

    func finished(size: Int) {
        current.withLock { $0 = nil }
        files.add(1, ordering: .relaxed)
        completedBytes.add(size, ordering: .relaxed)
    }
}

/// A push stopped by Ctrl-C (`PushTally.interrupted`): what arrived stays, the next run sends the rest.
package struct PushInterrupted: Error {}

extension Int {
    /// A rate as a whole number, whatever the double (infinite or beyond `Int`: the largest).
    init(clampingRate value: Double) {
        self = value.isNaN || value <= 0 ? 0 : value >= 9.2e18 ? Int.max : Int(value)
    }
}
