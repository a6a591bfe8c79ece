import CouchServer
import CouchWire
import Foundation
import Synchronization

/// The live progress of `couchlite receive`: one line rewritten in place on a terminal (photos, bytes, rate,
/// current file), one plain line per saved photo otherwise (logs, pipes, tests).
final class ReceiveProgress: Sendable {
    private let handle: FileHandle
    private let isTerminal: Bool
    private let state = Mutex(State())

    private struct State {
        var firstAt: ContinuousClock.Instant?
        var drawn = false
        /// Where the disk is full, once said and until photos are saved again.
        var fullIn: String?
    }

    init(handle: FileHandle) {
        self.handle = handle
        isTerminal = isatty(handle.fileDescriptor) == 1
    }

    /// Saving (or receiving) stopped because the disk of `place` (the export folder, the data dir) is full; said
    /// once until photos are saved again, so a sender retrying against 507 does not flood the output.
    func diskFull(in place: String) {
        state.withLock { state in
            guard state.fullIn != place else { return }
            state.fullIn = place
            let line = "disk full: no space left in \(place); waiting for free space (nothing received is lost)"
            if isTerminal {
                write("\r\u{1B}[K" + line)
                state.drawn = true
            } else {
                write(line + "\n")
            }
        }
    }

    /// The disk that was full has room again: saving carries on.
    func spaceAvailable() {
        state.withLock { state in
            guard state.fullIn != nil else { return }
            state.fullIn = nil
            write(
                (isTerminal ? "\r\u{1B}[K" : "") + "disk space available again, carrying on" + (isTerminal ? "" : "\n"))
        }
    }

    /// One photo saved.
    func saved(_ totals: PhotoExporter.Totals, file: String, bytes: Int) {
        let now = ContinuousClock.now
        state.withLock { state in
            if state.fullIn != nil, !isTerminal { write("disk space available again, carrying on\n") }
            state.fullIn = nil
            let first = state.firstAt ?? now
            state.firstAt = first
            if isTerminal {
                let seconds = max(0.001, (now - first).timeInterval)
                let rate = totals.photos > 1 ? ", \(ReceiveProgress.size(Int(Double(totals.bytes) / seconds)))/s" : ""
                let line =
                    "received \(totals.photos) photo\(totals.photos == 1 ? "" : "s"), "
                    + "\(ReceiveProgress.size(totals.bytes))\(rate): \(file)"
                write("\r\u{1B}[K" + line)
                state.drawn = true
            } else {
                write("saved \(file) (\(bytes) bytes)\n")
            }
        }
    }

    /// Ends the progress line, if one is drawn, so what follows starts on a line of its own.
    func finish() {
        state.withLock { state in
            if state.drawn { write("\n") }
            state.drawn = false
        }
    }

    private func write(_ text: String) {
        handle.write(Data(text.utf8))
    }

    /// `512 B`, `3.4 MB` (decimal units, as photo apps show sizes).
    static func size(_ bytes: Int) -> String {
        if bytes < 1000 { return "\(bytes) B" }
        let units = ["kB", "MB", "GB", "TB"]
        var value = Double(bytes) / 1000
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return String(format: "%.1f %@", value, units[unit])
    }
}
