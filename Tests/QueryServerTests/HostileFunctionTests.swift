import CouchWire
import Foundation
import QueryServer
import Testing

@Suite("Hostile design functions", .serialized)
struct HostileFunctionTests {
    @Test func infiniteLoopTimesOutAndTheWorkerIsReplaced() throws {
        let server = makeServer(timeout: .milliseconds(500), workers: 1)
        let loop = try ddoc(#"{"filters":{"l":"function(){ while (true) {} }","ok":"function(){ return true }"}}"#)
        let started = ContinuousClock.now
        #expect(throws: QueryServerError.timeout(seconds: 0.5)) {
            try server.filter(loop, name: "l", docs: [.null], request: .null)
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(try server.filter(loop, name: "ok", docs: [.null], request: .null) == [true])
        #expect(server.workersStarted == 2)
    }

    @Test func deepRecursionIsAnError() throws {
        let server = makeServer()
        let deep = try ddoc(#"{"filters":{"r":"function f(doc){ return 1 + f(doc) }"}}"#)
        #expect(throws: QueryServerError.self) { try server.filter(deep, name: "r", docs: [.null], request: .null) }
        #expect(
            try server.filter(
                try ddoc(#"{"filters":{"ok":"function(){ return 1 }"}}"#, rev: "2-b"), name: "ok", docs: [.null],
                request: .null)
                == [true])
    }

    @Test func allocatingForeverHitsTheHeapLimit() throws {
        var limits = WorkerLimits()
        limits.heapBytes = 64 * 1024 * 1024
        let server = makeServer(timeout: .seconds(20), workers: 1, limits: limits)
        let hog = try ddoc(
            #"{"filters":{"h":"function(){ var a = []; while (true) a.push('xxxxxxxxxxxxxxxx' + a.length); }"}}"#)
        #expect(throws: QueryServerError.self) { try server.filter(hog, name: "h", docs: [.null], request: .null) }
        let ok = try ddoc(#"{"filters":{"ok":"function(){ return true }"}}"#, rev: "2-b")
        #expect(try server.filter(ok, name: "ok", docs: [.null], request: .null) == [true])
    }

    @Test func hugeEmitsFailCleanly() throws {
        var limits = WorkerLimits()
        limits.heapBytes = 64 * 1024 * 1024
        let server = makeServer(timeout: .seconds(20), workers: 1, limits: limits)
        let huge = try ddoc(
            #"{"views":{"v":{"map":"function(doc){ var s = 'x'; for (var i = 0; i < 22; i++) s += s; for (;;) emit(s, s) }"}}}"#
        )
        let out = try server.map(huge, views: ["v"], docs: [.null])
        guard case .failed = out.first?.first else {
            Issue.record("expected the map to fail, got \(String(describing: out.first?.first).prefix(100))")
            return
        }
    }

    @Test func tamperingWithHelpersDoesNotReachOtherDesignDocuments() throws {
        let server = makeServer(workers: 1)
        let evil = try ddoc(
            #"{"_id":"_design/evil","filters":{"e":"function(){ emit = function(){}; sum = function(){ return 0 }; return true }"}}"#
        )
        _ = try server.filter(evil, name: "e", docs: [.null], request: .null)
        let good = try ddoc(#"{"_id":"_design/good","views":{"v":{"map":"function(doc){ emit(sum([1,2]), null) }"}}}"#)
        #expect(try server.map(good, views: ["v"], docs: [.null]) == [[.emitted([MapRow(key: .int(3), value: .null)])]])
    }

    /// Workers that break the protocol, played by small shell scripts standing in for `couchlite query-server`.
    @Test(arguments: [
        ("oversized", #"printf '\377\377\377\377'; sleep 5"#),
        ("truncated", #"head -c 4 >/dev/null; printf '\000\000\000\010abc'"#),
        ("malformed", #"head -c 4 >/dev/null; printf '\000\000\000\003abc'; sleep 5"#),
        ("exits", "exit 3"),
        ("silent", "sleep 30"),
    ])
    func misbehavingWorkerIsAnError(name: String, script: String) throws {
        let path = NSTemporaryDirectory() + "couchlite-fake-worker-\(name)-\(getpid()).sh"
        try Data("#!/bin/sh\n\(script)\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        chmod(path, 0o755)
        let server = QueryServer(
            QueryServerConfiguration(executable: path, maxWorkers: 1, timeout: .seconds(1), maxPayload: 1024 * 1024))
        let design = try ddoc(#"{"filters":{"f":"function(){ return true }"}}"#)
        let started = ContinuousClock.now
        #expect(throws: QueryServerError.self) { try server.filter(design, name: "f", docs: [.null], request: .null) }
        #expect(ContinuousClock.now - started < .seconds(4))
    }
}
