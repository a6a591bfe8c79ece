import CouchServer
import Foundation

/// Progress of a push on stderr: a bar redrawn in place on a terminal, plain lines (at most one a
/// second) when stderr is a pipe or a file.
///
/// `@unchecked Sendable`: `lastLine` and `drewBar` are unguarded, but only the thread running `couchlite push`
/// calls `show` and `message`; the replication's own thread never sees the display (push polls its `stats`).
package final class ProgressDisplay: @unchecked Sendable {
    let isTerminal: Bool
    private let started = Date()
    private var lastLine = Date.distantPast
    private var drewBar = false

    package init(isTerminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.isTerminal = isTerminal
    }

    /// Shows `done`/`total` photos and bytes; `final` always prints (and ends the bar's line).
    package func show(photos done: Int, of total: Int, bytes: Int, of totalBytes: Int, final: Bool = false) {
        let now = Date()
        if !final && !isTerminal && now.timeIntervalSince(lastLine) < 1 { return }
        lastLine = now
        let elapsed = max(now.timeIntervalSince(started), 0.001)
        let rate = Double(bytes) / elapsed
        let fraction =
            totalBytes > 0 ? Double(bytes) / Double(totalBytes) : (total > 0 ? Double(done) / Double(total) : 1)
        var eta = "--:--"
        if rate > 0 && totalBytes > bytes { eta = Self.clock(Double(totalBytes - bytes) / rate) }
        if final { eta = Self.clock(elapsed) }
        let figures =
            "\(done)/\(total) photos  \(Self.size(bytes))/\(Self.size(totalBytes))  \(Self.size(Int(rate)))/s  "
            + (final ? "in \(eta)" : "ETA \(eta)")
        if isTerminal {
            let width = 24
            let filled = min(width, Int(fraction * Double(width)))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            write("\r\u{1B}[2K[\(bar)] \(Int(fraction * 100))%  " + figures + (final ? "\n" : ""))
            drewBar = !final
        } else {
            write("push: " + figures + "\n")
        }
    }

    /// A message on a line of its own (ends a bar in progress first).
    package func message(_ text: String) {
        if drewBar {
            write("\n")
            drewBar = false
        }
        write(text + "\n")
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func size(_ bytes: Int) -> String {
        let value = Double(bytes)
        if value >= 1e9 { return String(format: "%.2f GB", value / 1e9) }
        if value >= 1e6 { return String(format: "%.1f MB", value / 1e6) }
        if value >= 1e3 { return String(format: "%.1f kB", value / 1e3) }
        return "\(bytes) B"
    }

    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }
}
