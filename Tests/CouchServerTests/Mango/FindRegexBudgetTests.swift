import CouchQuery
import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// Issue 35, item 2 over the API: one `_find`'s `$regex` matches share a CPU budget (500 `timeout` when spent), the
/// scan stops when its client has gone, and compiled patterns are reserved per server and given back.
@Suite struct FindRegexBudgetTests {
    /// 30 `a`s and a `!`: `^(a+)+$` runs into its million-step limit (~13 ms) on each.
    static let catastrophic = String(repeating: "a", count: 30) + "!"

    private func fill(_ server: InProcessServer, _ database: String, count: Int, value: String) throws {
        try server.createDatabase(database)
        let docs = (0..<count).map { #"{"_id":"d\#(String(format: "%05d", $0))","s":"\#(value)"}"# }
        let r = try server.request(
            "POST", "/\(database)/_bulk_docs", as: InProcessServer.admin,
            json: #"{"docs":["# + docs.joined(separator: ",") + "]}")
        #expect(r.status == 201, "\(r)")
    }

    /// 400 documents × ~13 ms was 5 s of CPU for one request (and 400 clauses would multiply it); the request's
    /// 100 ms budget ends it with CouchDB's 500 `timeout` after a handful of documents.
    @Test func regexBudgetSpentAcrossDocumentsIsA500Timeout() throws {
        let server = try InProcessServer(regexBudgetMilliseconds: 100)
        defer { server.shutdown() }
        try fill(server, "evil", count: 400, value: Self.catastrophic)
        let started = ContinuousClock.now
        let r = try server.request(
            "POST", "/evil/_find", as: InProcessServer.admin, json: #"{"selector":{"s":{"$regex":"^(a+)+$"}}}"#)
        #expect(r.status == 500, "\(r)")
        #expect(r.error == "timeout")
        #expect(r.reason?.contains("$regex") == true)
        #expect(ContinuousClock.now - started < .seconds(3))
        // An ordinary pattern over the same documents is answered.
        let fine = try server.request(
            "POST", "/evil/_find", as: InProcessServer.admin, json: #"{"selector":{"s":{"$regex":"^a+!$"}}}"#)
        #expect(fine.status == 200 && fine.json["docs"]?.arrayValue?.count == 25, "\(fine)")
    }

    /// `_changes?filter=_selector` runs the same matcher over every change: one catch-up's matches share the budget.
    @Test func changesSelectorRegexBudgetSpentIsA500Timeout() throws {
        let server = try InProcessServer(regexBudgetMilliseconds: 100)
        defer { server.shutdown() }
        try fill(server, "evil", count: 400, value: Self.catastrophic)
        let started = ContinuousClock.now
        let r = try server.request(
            "POST", "/evil/_changes?filter=_selector", as: InProcessServer.admin,
            json: #"{"selector":{"s":{"$regex":"^(a+)+$"}}}"#)
        #expect(r.status == 500 && r.error == "timeout", "\(r)")
        #expect(ContinuousClock.now - started < .seconds(3))
        let fine = try server.request(
            "POST", "/evil/_changes?filter=_selector&limit=2", as: InProcessServer.admin,
            json: #"{"selector":{"s":{"$regex":"^a+!$"}}}"#)
        #expect(fine.status == 200 && fine.json["results"]?.arrayValue?.count == 2, "\(fine)")
    }

    /// A `_changes` feed whose client has gone stops reading changes.
    @Test func changesFeedStopsWhenItsClientHasGone() throws {
        try InProcessServer.with { server in
            try fill(server, "left", count: 50, value: "x")
            let r = try server.request(
                "POST", "/left/_changes?filter=_selector", as: InProcessServer.admin,
                json: #"{"selector":{"s":{"$regex":"^y"}}}"#, clientGone: true)
            #expect(r.status == 400 && r.reason == HTTPError.clientGone.reason, "\(r)")
        }
    }

    /// A client that went away: the scan looks at its socket between documents and stops instead of reading on.
    @Test func findStopsWhenItsClientHasGone() throws {
        try InProcessServer.with { server in
            try fill(server, "left", count: 50, value: "x")
            let r = try server.request(
                "POST", "/left/_find", as: InProcessServer.admin, json: #"{"selector":{"s":{"$regex":"^y"}}}"#,
                clientGone: true)
            #expect(r.status == 400 && r.reason == HTTPError.clientGone.reason, "\(r)")
            let stayed = try server.request(
                "POST", "/left/_find", as: InProcessServer.admin, json: #"{"selector":{"s":{"$regex":"^y"}}}"#)
            #expect(stayed.status == 200, "\(stayed)")
        }
    }

    /// Thousands of `_find` calls with `$regex` (each pattern compiled to ~10 KB): the server's reservation of
    /// compiled bytes is back to zero after each, so nothing builds up across requests.
    @Test func thousandsOfRegexFindsLeaveTheCompiledMemoryFlat() throws {
        try InProcessServer.with { server in
            try fill(server, "many", count: 20, value: "abab")
            for number in 0..<2_000 {
                let r = try server.request(
                    "POST", "/many/_find", as: InProcessServer.admin,
                    json: #"{"selector":{"s":{"$regex":"^(?:ab){2}$|x\#(number)(?:ab){500}"}},"limit":1}"#)
                #expect(r.status == 200)
                if r.status != 200 { break }
            }
            #expect(server.app.regexMemory.inUse == 0)
        }
    }

    /// Selectors alive at once past the server's reservation: 503, and the bytes return when they go.
    @Test func compiledPatternMemoryIsCappedAcrossTheServer() throws {
        try InProcessServer.with { server in
            try server.createDatabase("full")
            let reserved = server.app.regexMemory.limit - 1_000
            // Another request's selectors hold all but a kilobyte.
            let holding = RegexHold(server.app.regexMemory, bytes: reserved)
            let r = try server.request(
                "POST", "/full/_find", as: InProcessServer.admin, json: #"{"selector":{"s":{"$regex":"(?:ab){1000}"}}}"#
            )
            #expect(r.status == 503 && r.error == "service_unavailable", "\(r)")
            let changes = try server.request(
                "POST", "/full/_changes?filter=_selector", as: InProcessServer.admin,
                json: #"{"selector":{"s":{"$regex":"(?:ab){1000}"}}}"#)
            #expect(changes.status == 503 && changes.error == "service_unavailable", "\(changes)")
            holding.release()
            let again = try server.request(
                "POST", "/full/_find", as: InProcessServer.admin, json: #"{"selector":{"s":{"$regex":"(?:ab){1000}"}}}"#
            )
            #expect(again.status == 200, "\(again)")
        }
    }

    /// One selector whose patterns compile to more than 4 MiB (a 6.5 KB body): 400 before any document is read.
    @Test func compiledPatternMemoryIsCappedPerRequest() throws {
        try InProcessServer.with { server in
            try server.createDatabase("big")
            let clauses = Array(repeating: #"{"s":{"$regex":"(?:ab){1000}"}}"#, count: 500).joined(separator: ",")
            let r = try server.request(
                "POST", "/big/_find", as: InProcessServer.admin, json: #"{"selector":{"$or":["# + clauses + "]}}")
            #expect(r.status == 400 && r.error == "bad_request", "\(r)")
            #expect(server.app.regexMemory.inUse == 0)
        }
    }
}

/// Holds bytes of a `RegexMemory` the way compiled selectors of other requests would.
private final class RegexHold {
    private var selectors: [Selector] = []

    init(_ memory: RegexMemory, bytes: Int) {
        // Patterns of ~10 KB until the wanted bytes are held.
        while memory.inUse < bytes {
            guard
                let selector = try? Selector(
                    .object(JSONObject([("s", ["$regex": "(?:ab){1000}"])])), regexMemory: memory)
            else {
                // The last kilobytes: smaller programs.
                guard let small = try? Selector(.object(JSONObject([("s", ["$regex": "ab"])])), regexMemory: memory)
                else { break }
                selectors.append(small)
                continue
            }
            selectors.append(selector)
        }
    }

    func release() { selectors.removeAll() }
}
