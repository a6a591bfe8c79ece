import CouchWire
import Dispatch
import Synchronization
import Testing

@testable import CouchServer

@Suite struct ViewIndexTests {
    private func setUp(_ server: ViewTestServer, docs: [String]) throws {
        #expect(try server.put("/db", "").status == 201)
        let body = #"{"docs":["# + docs.joined(separator: ",") + "]}"
        #expect(try server.request("POST", "/db/_bulk_docs", body).status == 201)
        let ddoc =
            #"{"views":{"k":{"map":"by_k"},"sum":{"map":"by_k","reduce":"_sum"},"js":{"map":"by_k","reduce":"function(k,v){return sum(v)}"},"c":{"map":"conflicts"}}}"#
        #expect(try server.put("/db/_design/d", ddoc).status == 201)
    }

    @Test func updatesMapOnlyWhatChanged() throws {
        let engine = FakeViewEngine.standard
        let server = try ViewTestServer(engine: engine)
        try setUp(server, docs: (0..<20).map { #"{"_id":"d\#($0)","k":\#($0),"v":1}"# })
        let first = try server.get("/db/_design/d/_view/k")
        #expect(first.status == 200)
        #expect(first.json["total_rows"] == .int(20))
        #expect(engine.mappedCount == 20)
        // Queried again with nothing changed: nothing is mapped.
        _ = try server.get("/db/_design/d/_view/k")
        #expect(engine.mappedCount == 20)
        // One update and one deletion: two documents mapped (the deleted one is not handed to the engine at all).
        let rev5 = try server.get("/db/d5").json["_rev"]?.stringValue ?? ""
        #expect(try server.put("/db/d5?rev=\(rev5)", #"{"k":100,"v":7}"#).status == 201)
        let rev6 = try server.get("/db/d6").json["_rev"]?.stringValue ?? ""
        #expect(try server.request("DELETE", "/db/d6?rev=\(rev6)").status == 200)
        let after = try server.get("/db/_design/d/_view/k").json
        #expect(engine.mappedCount == 21)
        #expect(after["total_rows"] == .int(19))
        let rows = after["rows"]?.arrayValue ?? []
        #expect(rows.last?["id"] == "d5")
        #expect(rows.last?["key"] == .int(100))
        #expect(!rows.contains { $0["id"] == "d6" })
        #expect(try server.get("/db/_design/d/_view/sum").json["rows"]?[0]?["value"] == .int(25))
    }

    @Test func onlyTheWinningRevisionIsMapped() throws {
        let server = try ViewTestServer()
        try setUp(server, docs: [])
        let replicated =
            #"{"new_edits":false,"docs":[{"_id":"x","_rev":"1-aaa","k":"loser"},{"_id":"x","_rev":"1-bbb","k":"winner"}]}"#
        #expect(try server.request("POST", "/db/_bulk_docs", replicated).status == 201)
        #expect(try server.keys("/db/_design/d/_view/k") == ["winner"])
        // The map function sees `_conflicts`, as CouchDB's conflicts views rely on.
        #expect(try server.keys("/db/_design/d/_view/c") == [.array(["1-aaa"])])
        // Deleting the winner makes the other branch win: its row replaces the old one.
        #expect(try server.request("DELETE", "/db/x?rev=1-bbb").status == 200)
        #expect(try server.keys("/db/_design/d/_view/k") == ["loser"])
        #expect(try server.keys("/db/_design/d/_view/c") == [])
    }

    @Test func signaturesShareAndRebuild() throws {
        let engine = FakeViewEngine.standard
        let server = try ViewTestServer(engine: engine)
        try setUp(server, docs: (0..<5).map { #"{"_id":"d\#($0)","k":\#($0)}"# })
        let info = try server.get("/db/_design/d/_info").json
        let signature = info["view_index"]?["signature"]
        _ = try server.get("/db/_design/d/_view/k")
        // Another design document with the same views shares the index: nothing is mapped again.
        let same =
            #"{"views":{"k":{"map":"by_k"},"sum":{"map":"by_k","reduce":"_sum"},"js":{"map":"by_k","reduce":"function(k,v){return sum(v)}"},"c":{"map":"conflicts"}},"filters":{}}"#
        #expect(try server.put("/db/_design/e", same).status == 201)
        #expect(try server.get("/db/_design/e/_info").json["view_index"]?["signature"] == signature)
        #expect(try server.keys("/db/_design/e/_view/k").count == 5)
        #expect(engine.mappedCount == 5)
        // A changed view is a new signature and a new build.
        let rev = try server.get("/db/_design/e").json["_rev"]?.stringValue ?? ""
        #expect(try server.put("/db/_design/e?rev=\(rev)", #"{"views":{"k":{"map":"twice"}}}"#).status == 201)
        #expect(try server.get("/db/_design/e/_info").json["view_index"]?["signature"] != signature)
        #expect(try server.keys("/db/_design/e/_view/k").count == 10)
        #expect(engine.mappedCount == 10)
        // Cleanup keeps the live signatures and deletes the others' files.
        #expect(try server.request("POST", "/db/_view_cleanup", "{}").status == 202)
        #expect(try server.keys("/db/_design/d/_view/k").count == 5)
        #expect(engine.mappedCount == 10)
    }

    @Test func reduceGroupsAndJavaScriptReduce() throws {
        let server = try ViewTestServer()
        let docs = [#"{"k":["a",1],"v":1}"#, #"{"k":["a",2],"v":2}"#, #"{"k":["b",1],"v":3}"#, #"{"k":["b",1],"v":4}"#]
        try setUp(server, docs: docs)
        #expect(try server.get("/db/_design/d/_view/sum").json["rows"] == [["key": .null, "value": 10]])
        let level1 = try server.get("/db/_design/d/_view/sum?group_level=1").json["rows"]
        #expect(level1 == [["key": ["a"], "value": 3], ["key": ["b"], "value": 7]])
        let exact = try server.get("/db/_design/d/_view/sum?group=true").json["rows"]?.arrayValue ?? []
        #expect(exact.map { $0["value"] } == [1, 2, 7])
        let js = try server.get("/db/_design/d/_view/js?group_level=1").json["rows"]?.arrayValue ?? []
        #expect(js.map { $0["value"]?.numberValue?.doubleValue } == [3, 7])
        let keys = try server.request("POST", "/db/_design/d/_view/sum?group=true", #"{"keys":[["b",1],["a",1]]}"#)
        #expect(keys.json["rows"] == [["key": ["b", 1], "value": 7], ["key": ["a", 1], "value": 1]])
        #expect(try server.get("/db/_design/d/_view/sum?reduce=false").json["total_rows"] == 4)
    }

    @Test func queryErrorsAreCouchDBs() throws {
        let server = try ViewTestServer()
        try setUp(server, docs: [])
        let cases: [(String, Int, String)] = [
            ("/db/_design/d/_view/k?group=true", 400, "Invalid use of grouping on a map view."),
            ("/db/_design/d/_view/k?reduce=true", 400, "Reduce is invalid for map-only views."),
            ("/db/_design/d/_view/sum?include_docs=true", 400, "`include_docs` is invalid for reduce"),
            ("/db/_design/d/_view/sum?keys=[1,2]", 400, "Multi-key fetches for reduce views must use `group=true`"),
            ("/db/_design/d/_view/k?limit=-1", 400, "Invalid value for positive integer: \"-1\""),
            (
                "/db/_design/d/_view/k?startkey=2&endkey=1", 400,
                "No rows can match your key range, reverse your start_key and end_key or set descending=true"
            ),
            ("/db/_design/d/_view/k?stale=nope", 400, "Invalid value for `stale`."),
            ("/db/_design/d/_view/nope", 404, "missing_named_view"),
            ("/db/_design/nope/_view/k", 404, "missing"),
        ]
        for (path, status, reason) in cases {
            let response = try server.get(path)
            #expect(response.status == status, "\(path)")
            #expect(response.json["reason"] == .string(reason), "\(path)")
        }
    }

    @Test func rangesAndPaging() throws {
        let server = try ViewTestServer()
        try setUp(server, docs: (0..<1200).map { #"{"_id":"d\#(String(1000 + $0))","k":\#($0 / 2)}"# })
        // More rows than a page: every row comes back, in key then doc id order.
        let all = try server.get("/db/_design/d/_view/k").json["rows"]?.arrayValue ?? []
        #expect(all.count == 1200)
        #expect(all[1]["id"] == "d1001")
        let range = try server.get("/db/_design/d/_view/k?startkey=10&endkey=12&inclusive_end=false").json
        #expect(range["offset"] == 20)
        #expect((range["rows"]?.arrayValue ?? []).map { $0["key"] } == [10, 10, 11, 11])
        let desc = try server.get("/db/_design/d/_view/k?startkey=12&endkey=10&descending=true&skip=1&limit=3").json
        #expect((desc["rows"]?.arrayValue ?? []).map { $0["id"] } == ["d1024", "d1023", "d1022"])
        let docid = try server.get("/db/_design/d/_view/k?key=5&startkey_docid=d1011").json
        #expect((docid["rows"]?.arrayValue ?? []).map { $0["id"] } == ["d1011"])
        let stale = try server.get("/db/_design/d/_view/k?update_seq=true&limit=1").json
        #expect(stale["update_seq"]?.stringValue?.hasPrefix("1201-") == true)
    }
}

@Suite struct ViewQueryFeaturesTests {
    @Test func concurrentQueriesShareOneUpdate() throws {
        let engine = FakeViewEngine.standard
        let server = try ViewTestServer(engine: engine)
        #expect(try server.put("/db", "").status == 201)
        let docs = (0..<2000).map { #"{"k":\#($0)}"# }.joined(separator: ",")
        #expect(try server.request("POST", "/db/_bulk_docs", #"{"docs":[\#(docs)]}"#).status == 201)
        #expect(try server.put("/db/_design/d", #"{"views":{"k":{"map":"by_k"}}}"#).status == 201)
        let totals = Mutex<[JSON]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let total = (try? server.get("/db/_design/d/_view/k?limit=1").json["total_rows"]) ?? .null
            totals.withLock { $0.append(total) }
        }
        #expect(totals.withLock { $0 } == Array(repeating: 2000, count: 6))
        #expect(engine.mappedCount == 2000)
    }

    @Test func includeDocsKeysAndLinkedDocuments() throws {
        let server = try ViewTestServer()
        #expect(try server.put("/db", "").status == 201)
        let docs = #"{"docs":[{"_id":"a","k":1},{"_id":"b","k":2,"v":{"_id":"a"}},{"_id":"c","k":3}]}"#
        #expect(try server.request("POST", "/db/_bulk_docs", docs).status == 201)
        #expect(try server.put("/db/_design/d", #"{"views":{"k":{"map":"by_k"}}}"#).status == 201)
        let rows = try server.get("/db/_design/d/_view/k?include_docs=true&keys=[3,2,9]").json["rows"]?.arrayValue ?? []
        #expect(rows.map { $0["id"] } == ["c", "b"])
        #expect(rows[0]["doc"]?["_id"] == "c")
        #expect(rows[1]["doc"]?["_id"] == "a")  // the value {"_id":"a"} links the row to document a
        let post = try server.request("POST", "/db/_design/d/_view/k", #"{"keys":[2,1]}"#).json["rows"]?.arrayValue
        #expect((post ?? []).map { $0["id"] } == ["b", "a"])
        // update=false answers from the index as it is; a later default query catches up.
        #expect(try server.put("/db/d", #"{"k":4}"#).status == 201)
        #expect(try server.get("/db/_design/d/_view/k?stale=ok").json["total_rows"] == 3)
        #expect(try server.get("/db/_design/d/_view/k").json["total_rows"] == 4)
    }

    @Test func changesFilteredByView() throws {
        let server = try ViewTestServer()
        #expect(try server.put("/db", "").status == 201)
        let docs = #"{"docs":[{"_id":"a","k":1},{"_id":"b"},{"_id":"c","k":3}]}"#
        #expect(try server.request("POST", "/db/_bulk_docs", docs).status == 201)
        #expect(try server.put("/db/_design/d", #"{"views":{"k":{"map":"by_k"}}}"#).status == 201)
        let feed = try server.get("/db/_changes?filter=_view&view=d/k").json["results"]?.arrayValue ?? []
        #expect(feed.map { $0["id"] } == ["a", "c"])
        #expect(try server.get("/db/_changes?filter=_view&view=d/nope").status == 404)
        #expect(try server.get("/db/_changes?filter=_view").status == 400)
    }
}
