import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// One-shot `_replicate` requests as transient jobs of the scheduler (issue 38): run one after another thousands of
/// times in one process, each answers 200, and nothing stays behind: no scheduled job, no thread, no memory, no
/// slower call at the end than at the start.
@Suite struct OneShotSchedulingTests {
    private static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    private static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test func twoThousandOneShotReplicationsLeaveNothingScheduled() throws {
        try InProcessServer.with { server in
            let replicator = ReplicatorDatabase(app: server.app)
            server.app.replicatorDatabase.withLock { $0 = replicator }
            replicator.start()
            defer { replicator.stop() }
            try server.createDatabase("src")
            try server.request("PUT", "/src/doc", as: InProcessServer.admin, json: #"{"a":1}"#)
            let body = #"{"source":"src","target":"dst","create_target":true}"#
            var timings: [Duration] = []
            var threads: [Int] = []
            var resident: [Int] = []
            let clock = ContinuousClock()
            for round in 0..<2_000 {
                var response: TestResponse?
                let took = try clock.measure {
                    response = try server.request("POST", "/_replicate", as: InProcessServer.admin, json: body)
                }
                guard let response, response.status == 200, response.json["ok"]?.boolValue == true else {
                    Issue.record("round \(round): \(response.map(String.init(describing:)) ?? "none")")
                    return
                }
                timings.append(took)
                if round % 250 == 0 {
                    threads.append(Self.threads())
                    resident.append(Self.residentBytes())
                }
            }
            #expect(
                replicator.jobStates.allSatisfy { !ReplicatorDatabase.isTransient($0.0) }, "\(replicator.jobStates)")
            #expect(server.app.replications.all.isEmpty)
            let early = timings.prefix(250).sorted()[125]
            let late = timings.suffix(250).sorted()[125]
            #expect(late < early * 5 + .milliseconds(5), "median \(early) at first, \(late) at the end")
            #expect((threads.max() ?? 0) - (threads.first ?? 0) <= 4, "threads \(threads)")
            #expect((resident.last ?? 0) - (resident[1]) < 48 * 1024 * 1024, "resident \(resident)")
        }
    }
}
