import CouchWire
import Foundation
import Synchronization

/// Severity of a log line; lines below the configured level are dropped.
package enum LogLevel: String, Comparable, Sendable {
    case error, warning, info, debug

    private var rank: Int {
        switch self {
        case .error: 0
        case .warning: 1
        case .info: 2
        case .debug: 3
        }
    }

    package static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

/// A logger's level, changed live by `_config` (`[log] level`).
package final class LogThreshold: Sendable {
    private let current: Mutex<LogLevel>
    /// The level the server started with (`--log-level`), which `DELETE` of the key goes back to.
    let initial: LogLevel

    init(_ level: LogLevel) {
        initial = level
        current = Mutex(level)
    }

    var level: LogLevel {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}

/// How a line is written: `text` for people, `json` for collectors (`--log-format`).
package enum LogFormat: String, Sendable {
    case text, json
}

/// A small structured logger writing one line per event to stderr (swift-log's shape: fixed
/// messages, data in metadata keys).
///
/// As text: `2026-12-01T12:00:00.000Z [info] couchlite: request method=GET …`. As JSON, one object per
/// line: `{"time","level","label","message"}` followed by the metadata keys, strings except `status`,
/// `bytes`, `ms` and `port`, which are numbers (a key that would shadow one of the first four is prefixed
/// with `meta_`). An access line is `"message":"request"` with `client`, `method`, `path`, `status`,
/// `bytes` and `ms`.
package struct Logger: Sendable {
    let label: String
    /// Shared by every copy of this logger, so `PUT /_node/_local/_config/log/level` changes them all.
    let threshold: LogThreshold
    let format: LogFormat
    private static let lock = Mutex(())
    private static let reserved: Set<String> = ["time", "level", "label", "message"]
    /// Metadata written as JSON numbers (when they are numbers): an access line's status, bytes and time.
    private static let numeric: Set<String> = ["status", "bytes", "ms", "port"]

    package init(label: String, level: LogLevel, format: LogFormat = .text) {
        self.label = label
        self.threshold = LogThreshold(level)
        self.format = format
    }

    /// The lowest severity written now.
    var level: LogLevel { threshold.level }

    func log(_ lineLevel: LogLevel, _ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        guard lineLevel <= level else { return }
        let line = Self.line(
            format, time: Logger.timestamp(), level: lineLevel, label: label, message: message,
            metadata: metadata.map { ($0.key, $0.value) })
        Logger.lock.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    /// One log line, newline included.
    static func line(
        _ format: LogFormat, time: String, level: LogLevel, label: String, message: String,
        metadata: [(String, String)]
    ) -> String {
        switch format {
        case .text:
            var line = "\(time) [\(level.rawValue)] \(label): \(message)"
            for (key, value) in metadata { line += " \(key)=\(value)" }
            return line + "\n"
        case .json:
            var fields: [(String, JSON)] = [
                ("time", .string(time)), ("level", .string(level.rawValue)), ("label", .string(label)),
                ("message", .string(message)),
            ]
            for (key, value) in metadata {
                let number = numeric.contains(key) ? JSONNumber(value).map(JSON.number) : nil
                fields.append((reserved.contains(key) ? "meta_" + key : key, number ?? .string(value)))
            }
            return JSON.object(JSONObject(fields)).serializedString + "\n"
        }
    }

    package func error(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.error, message, metadata)
    }
    package func warning(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.warning, message, metadata)
    }
    package func info(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.info, message, metadata)
    }
    func debug(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.debug, message, metadata) }

    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var tm = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &tm)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
            tm.tm_min, tm.tm_sec, now.tv_nsec / 1_000_000)
    }
}
