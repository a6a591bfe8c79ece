import CouchWire
import Testing

@testable import CouchServer

/// `[replicator] max_jobs`, `interval` and `max_churn` through `_config`: checked before anything changes (a value
/// the scheduler could not use is refused, never half-applied), each change wakes the scheduler's timer, and a
/// `DELETE` puts back the value the server started with.
@Suite struct ReplicatorSettingsTests {
    private func entries(_ settings: ReplicatorSettings) -> [String: ConfigSettings.Entry] {
        Dictionary(uniqueKeysWithValues: ConfigSettings.replicator(settings).map { ($0.key, $0) })
    }

    @Test(arguments: ["abc", "-1", "1.5", "", " 7", "99999999999999999999999", "0x10", "1e3"])
    func aBadValueChangesNothing(_ value: String) {
        let settings = ReplicatorSettings(maxJobs: 500, intervalMilliseconds: 60_000, maxChurn: 20)
        for (key, entry) in entries(settings) {
            let before = entry.read()
            #expect(throws: CouchError.self, "\(key)=\(value)") { try entry.write(value) }
            #expect(entry.read() == before)
        }
    }

    @Test func zeroJobsIsAllowedButNoZeroIntervalOrChurn() throws {
        // CouchDB's scheduler takes max_jobs 0 (nothing runs) and ignores a live max_churn or interval of 0.
        let settings = ReplicatorSettings(maxJobs: 500, intervalMilliseconds: 60_000, maxChurn: 20)
        let entries = entries(settings)
        try entries["max_jobs"]?.write("0")
        #expect(settings.maxJobs.value == 0)
        #expect(throws: CouchError.self) { try entries["interval"]?.write("0") }
        #expect(throws: CouchError.self) { try entries["max_churn"]?.write("0") }
        #expect(settings.interval == .seconds(60) && settings.maxChurn.value == 20)
    }

    @Test func aChangeWakesTheTimerAndAResetPutsBackTheStartingValue() throws {
        let settings = ReplicatorSettings(maxJobs: 10, intervalMilliseconds: 5_000, maxChurn: 2)
        let interval = try #require(entries(settings)["interval"])
        try interval.write("250")
        #expect(settings.interval == .milliseconds(250))
        #expect(settings.changed.sleep(for: .seconds(5)), "the change did not wake the timer")
        interval.reset()
        #expect(settings.intervalMilliseconds.value == 5_000)
        #expect(settings.changed.sleep(for: .seconds(5)), "the reset did not wake the timer")
    }

    @Test func theSettingsAreInTheReplicatorSection() throws {
        try InProcessServer.with { server in
            let section = try server.request("GET", "/_node/_local/_config/replicator", as: InProcessServer.admin)
            #expect(section.json["max_jobs"] == "500")
            #expect(section.json["interval"] == "60000")
            #expect(section.json["max_churn"] == "20")
        }
    }
}
