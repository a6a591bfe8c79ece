import CouchWire
import Foundation

/// A `_replicator` job's life as CouchDB's scheduler records it (`couch_replicator_scheduler`): the events
/// `added`, `started`, `crashed` (with its reason) and `stopped`, newest first and at most 20 (its `max_history`).
/// From them come what `_scheduler/jobs` and `_scheduler/docs` show — the `history`, `last_updated`, the
/// `error_count` (consecutive crashes) — and how long the job waits before it is started again.
struct SchedulerHistory: Sendable, Equatable {
    enum Kind: String, Sendable {
        case added, started, crashed, stopped
    }

    struct Event: Sendable, Equatable {
        var kind: Kind
        var time: Date
        /// Why a `crashed` event happened, in CouchDB's words.
        var reason: String?
    }

    /// CouchDB's `max_history`.
    static let maxEvents = 20
    /// CouchDB's `health_threshold` (2 minutes): a crash longer than this after the event before it does not
    /// count as consecutive (the job ran well meanwhile).
    static let healthThreshold: TimeInterval = 120
    /// CouchDB's `MAX_BACKOFF_EXPONENT`: the pause stops doubling after ten consecutive crashes (~8.5 h at 30 s).
    static let maxBackoffExponent = 10

    /// Newest first.
    private(set) var events: [Event]

    /// A job that starts its history now (`added`).
    init(added: Date = Date()) {
        events = [Event(kind: .added, time: added)]
    }

    mutating func record(_ kind: Kind, reason: String? = nil, at time: Date = Date()) {
        events.insert(Event(kind: kind, time: time, reason: reason), at: 0)
        if events.count > Self.maxEvents { events.removeLast(events.count - Self.maxEvents) }
    }

    /// When the newest event happened (`last_updated`).
    var lastUpdated: Date { events.first?.time ?? Date.distantPast }

    /// The reason of the newest event when it is a crash (what a `crashing` job shows).
    var crashReason: String? {
        guard let newest = events.first, newest.kind == .crashed else { return nil }
        return newest.reason ?? ""
    }

    /// When the newest crash happened (CouchDB's `latest_crash_timestamp`), if the job crashed.
    var latestCrash: Date? { events.first { $0.kind == .crashed }?.time }

    /// CouchDB's `consecutive_crashes`: crashes each within `healthThreshold` of the event before it, counted from
    /// the newest; a streak also ends at a `stopped` right after a `started` (the job was stopped, not crashed).
    var consecutiveCrashes: Int {
        var count = 0
        var index = 0
        while index < events.count {
            let event = events[index]
            let previous = index + 1 < events.count ? events[index + 1] : nil
            if event.kind == .crashed, let previous {
                if event.time.timeIntervalSince(previous.time) > Self.healthThreshold { return count }
                count += 1
            } else if event.kind == .stopped, previous?.kind == .started {
                return count
            }
            index += 1
        }
        return count
    }

    /// How long after its latest crash the job waits before it starts again: CouchDB's `backoff_micros`,
    /// `base · 2^(crashes − 1)` with the exponent capped at 10 (CouchDB's base is 30 s). A crash that ends a
    /// long healthy run (no consecutive crashes) waits `base` too, as CouchDB's restart waits for its next
    /// scheduling round: never no pause at all.
    func backoff(base: Duration) -> Duration {
        let exponent = min(max(consecutiveCrashes, 1) - 1, Self.maxBackoffExponent)
        return base * (1 << exponent)
    }

    /// `_scheduler/jobs`' `history`: `{"timestamp","type"}`, and `reason` for a crash.
    var json: JSON {
        .array(
            events.map { event in
                var fields: [(String, JSON)] = [
                    ("timestamp", .string(Self.iso8601(event.time))), ("type", .string(event.kind.rawValue)),
                ]
                if event.kind == .crashed { fields.append(("reason", .string(event.reason ?? ""))) }
                return .object(JSONObject(fields))
            })
    }

    /// CouchDB's `couch_replicator_utils:iso8601`: whole seconds, UTC, `Z`.
    static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
