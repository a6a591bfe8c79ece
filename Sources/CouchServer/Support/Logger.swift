import Foundation
import Synchronization

/// Severity of a log line; lines below the configured level are dropped.
enum LogLevel: String, Comparable, Sendable {
    case error, warning, info, debug

    private var rank: Int {
        switch self {
        case .error: 0
        case .warning: 1
        case .info: 2
        case .debug: 3
        }
    }

    static func < (a: LogLevel, b: LogLevel) -> Bool { a.rank < b.rank }
}

/// A small structured logger writing one line per event to stderr (swift-log's shape: fixed
/// messages, data in metadata keys).
struct Logger: Sendable {
    let label: String
    let level: LogLevel
    private static let lock = Mutex(())

    func log(_ lineLevel: LogLevel, _ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        guard lineLevel <= level else { return }
        var line = "\(Logger.timestamp()) [\(lineLevel.rawValue)] \(label): \(message)"
        for (key, value) in metadata { line += " \(key)=\(value)" }
        line += "\n"
        Logger.lock.withLock { _ in
            FileHandle.standardError.write(Data(line.utf8))
        }
    }

    func error(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.error, message, metadata) }
    func warning(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.warning, message, metadata)
    }
    func info(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.info, message, metadata) }
    func debug(_ message: String, _ metadata: KeyValuePairs<String, String> = [:]) { log(.debug, message, metadata) }

    private static func timestamp() -> String {
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
