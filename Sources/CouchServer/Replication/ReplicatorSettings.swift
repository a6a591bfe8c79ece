import Foundation

/// CouchDB's `[replicator]` scheduling settings, changed live through `_config` (and first set from the command
/// line): `max_jobs`, `interval` (ms) and `max_churn`. A change wakes the scheduler's timer so that a new
/// `interval` counts from the last pass at once; a new `max_jobs` or `max_churn` is applied by the next pass, as in
/// CouchDB.
final class ReplicatorSettings: Sendable {
    /// CouchDB's defaults (`DEFAULT_MAX_JOBS`, `DEFAULT_SCHEDULER_INTERVAL`, `DEFAULT_MAX_CHURN`).
    static let defaultMaxJobs = 500
    static let defaultIntervalMilliseconds = 60_000
    static let defaultMaxChurn = 20

    let maxJobs: LiveInt
    let intervalMilliseconds: LiveInt
    let maxChurn: LiveInt
    /// Woken by every change (the scheduler's timer sleeps on it).
    let changed = Wakeup()

    init(maxJobs: Int, intervalMilliseconds: Int, maxChurn: Int) {
        self.maxJobs = LiveInt(maxJobs)
        self.intervalMilliseconds = LiveInt(intervalMilliseconds)
        self.maxChurn = LiveInt(maxChurn)
    }

    convenience init(_ options: Options) {
        self.init(
            maxJobs: options.replicatorMaxJobs, intervalMilliseconds: options.replicatorIntervalMilliseconds,
            maxChurn: options.replicatorMaxChurn)
    }

    var interval: Duration { .milliseconds(intervalMilliseconds.value) }
}

extension ConfigSettings {
    /// `[replicator] max_jobs` (0 or more), `interval` and `max_churn` (1 or more): what CouchDB's scheduler takes
    /// from a live change (`handle_cast({set_…})`). CouchDB answers 200 to a value its scheduler then ignores (a
    /// `max_churn` of 0, text); couchlite refuses it with a 400, so that `_config` never shows a value not in use.
    static func replicator(_ settings: ReplicatorSettings) -> [Entry] {
        [
            scheduling("max_jobs", settings.maxJobs, minimum: 0, settings),
            scheduling("interval", settings.intervalMilliseconds, minimum: 1, settings),
            scheduling("max_churn", settings.maxChurn, minimum: 1, settings),
        ]
    }

    private static func scheduling(_ key: String, _ setting: LiveInt, minimum: Int, _ settings: ReplicatorSettings)
        -> Entry
    {
        Entry(
            section: "replicator", key: key, read: { String(setting.value) },
            write: { value throws(CouchError) in
                guard let number = Int(value), number >= minimum else {
                    let kind = minimum > 0 ? "a positive integer" : "a non-negative integer"
                    throw .badRequest("[replicator] \(key) must be \(kind)")
                }
                setting.set(number)
                settings.changed.wake()
            },
            reset: {
                setting.set(setting.initial)
                settings.changed.wake()
            })
    }
}
