import CouchStore
import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// Reduce queries answered from the stored partial reductions of chunks must be byte for byte the answers of the
/// fold over every row (the index with its chunks marked stale, queried with `update=false`), for every reducer,
/// grouping, range and direction, before and after incremental updates, deletions and conflicts.
@Suite struct ViewStoredReductionTests {
    static let engine = FakeViewEngine([
        "by_k": { doc in doc["k"].map { [Emit(key: $0, value: doc["v"] ?? .null)] } ?? [] },
        "by_k_w": { doc in doc["k"].map { [Emit(key: $0, value: doc["w"] ?? .null)] } ?? [] },
    ])

    static let design =
        #"{"views":{"sum":{"map":"by_k","reduce":"_sum"},"count":{"map":"by_k","reduce":"_count"},"#
        + #""stats":{"map":"by_k","reduce":"_stats"},"approx":{"map":"by_k","reduce":"_approx_count_distinct"},"#
        + #""js":{"map":"by_k","reduce":"function(k,v,r){return sum(v)}"},"#
        + #""wsum":{"map":"by_k_w","reduce":"_sum"},"wstats":{"map":"by_k_w","reduce":"_stats"}}}"#

    /// Array keys of three levels, a few scalars among them; values halves (their sums are exact in any order).
    static func document(_ i: Int, version: Int = 0) -> String {
        let key = i % 41 == 0 ? "\(i % 3)" : "[\(i % 4),\(i % 9),\(i % 5)]"
        let v = Double((i * 7 + version) % 23) / 2 - 3
        // `w`: numbers, with one string (a `_sum` error) and one array (a `_stats` shape mismatch) in the view.
        let w = i == 700 ? #""oops""# : i == 900 ? "[1,2]" : "\(i % 13)"
        return #"{"_id":"d\#(1000 + i)","k":\#(key),"v":\#(v),"w":\#(w)}"#
    }

    static let queries: [String] = {
        var out: [String] = []
        let ranges = [
            "", "startkey=[1]&endkey=[2,5]", "startkey=[1,3]&endkey=[1,3,{}]", "endkey=[2]&inclusive_end=false",
            "startkey=[3,8]&endkey=[1,2]&descending=true",
            "startkey=[2,2,2]&startkey_docid=d1400&endkey=[3]&endkey_docid=d1100",
            "startkey=[1,1,1]&endkey=[1,1,1]&endkey_docid=d1500&inclusive_end=false", "startkey=1&endkey=[0,5]",
        ]
        for range in ranges {
            for grouping in ["", "group=true", "group_level=2", "group_level=1&limit=2&skip=1"] {
                out.append([range, grouping].filter { !$0.isEmpty }.joined(separator: "&"))
            }
        }
        out.append("group=true&keys=[[1,1,1],[0,0,0],[1,1,1],[9]]")
        return out
    }()

    private func compare(_ server: ViewTestServer, _ label: String) throws {
        let database = try server.app.store.existing("db")
        let group = try ViewGroup.load(database, design: "d")
        let index = try server.app.views.index(database, group)
        var paths: [String] = []
        for view in ["sum", "count", "stats", "approx", "js", "wsum", "wstats"] {
            for query in ViewStoredReductionTests.queries { paths.append("/db/_design/d/_view/\(view)?" + query) }
        }
        // Bringing the index up to date refolds its chunks (when stale), then the answers use them.
        var chunked: [ViewTestServer.Response] = []
        for path in paths { chunked.append(try server.get(path)) }
        #expect(index.file.chunksValid, "\(label)")
        // A write without a reducer marks the chunks stale: the answers with `update=false` fold every row.
        try index.file.apply([], seq: index.file.updateSeq)
        for (path, answer) in zip(paths, chunked) {
            let rows = try server.get(path + (path.hasSuffix("?") ? "" : "&") + "update=false")
            #expect(answer.status == rows.status, "\(label) \(path)")
            #expect(
                String(decoding: answer.body, as: UTF8.self) == String(decoding: rows.body, as: UTF8.self),
                "\(label) \(path)")
        }
        #expect(!index.file.chunksValid, "\(label)")
        // Valid again (refolded from scratch), so the writes that follow are kept up to date chunk by chunk.
        _ = try server.get(paths[0])
        #expect(index.file.chunksValid, "\(label)")
    }

    @Test func storedReductionsAnswerAsTheFoldOverEveryRow() throws {
        let server = try ViewTestServer(engine: ViewStoredReductionTests.engine)
        #expect(try server.put("/db", "").status == 201)
        let docs = (0..<1000).map { ViewStoredReductionTests.document($0) }.joined(separator: ",")
        #expect(try server.request("POST", "/db/_bulk_docs", #"{"docs":[\#(docs)]}"#).status == 201)
        #expect(try server.put("/db/_design/d", ViewStoredReductionTests.design).status == 201)
        try compare(server, "build")
        // Incremental: rewrites (new keys and values), deletions, new documents and a conflict whose loser
        // becomes the winner.
        var batch: [String] = []
        for i in stride(from: 0, to: 1000, by: 37) {
            let rev = try server.get("/db/d\(1000 + i)").json["_rev"]?.stringValue ?? ""
            if i % 2 == 0 {
                let body = ViewStoredReductionTests.document(i * 3 + 1, version: 5)
                    .replacingOccurrences(of: #""_id":"d\#(1000 + i * 3 + 1)""#, with: #""_id":"d\#(1000 + i)""#)
                batch.append(body.replacingOccurrences(of: "{", with: #"{"_rev":"\#(rev)","#, options: [.anchored]))
            } else {
                batch.append(#"{"_id":"d\#(1000 + i)","_rev":"\#(rev)","_deleted":true}"#)
            }
        }
        batch += (1000..<1100).map { ViewStoredReductionTests.document($0) }
        #expect(
            try server.request("POST", "/db/_bulk_docs", #"{"docs":[\#(batch.joined(separator: ","))]}"#).status == 201)
        let conflict =
            #"{"new_edits":false,"docs":[{"_id":"d1001","_rev":"9-zzz","k":[0,0,0],"v":100,"w":1}]}"#
        #expect(try server.request("POST", "/db/_bulk_docs", conflict).status == 201)
        // The conflict's winner deleted: the other branch's row comes back.
        #expect(try server.request("DELETE", "/db/d1001?rev=9-zzz").status == 200)
        try compare(server, "incremental")
    }

    @Test func emptyAndOneRowViews() throws {
        let server = try ViewTestServer(engine: ViewStoredReductionTests.engine)
        #expect(try server.put("/db", "").status == 201)
        #expect(try server.put("/db/_design/d", ViewStoredReductionTests.design).status == 201)
        try compare(server, "empty")
        #expect(try server.put("/db/only", #"{"k":[1,1,1],"v":2.5,"w":3}"#).status == 201)
        try compare(server, "one row")
    }
}
