import CouchWire
import Testing

@testable import CouchServer

/// What a replicator asks of a database: `_revs_diff`, `_bulk_docs` with `new_edits: false`, `_bulk_get`,
/// `_ensure_full_commit` (conformance/test_bulk.py).
@Suite struct ReplicationProtocolTests {
    static let h1 = String(repeating: "a", count: 32)
    static let h2 = String(repeating: "2", count: 32)

    @Test func revsDiffBulkDocsAndBulkGet() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            try server.createDatabase("rep")
            let (h1, h2) = (Self.h1, Self.h2)
            let before = try server.request("POST", "/rep/_revs_diff", as: admin, json: #"{"d":["1-\#(h1)"]}"#)
            #expect(before.status == 200, "\(before)")
            #expect(before.json["d"]?["missing"]?[0]?.stringValue == "1-\(h1)")
            let docs =
                #"{"new_edits":false,"docs":[{"_id":"d","_rev":"2-\#(h2)","v":2,"#
                + #""_revisions":{"start":2,"ids":["\#(h2)","\#(h1)"]}}]}"#
            for _ in 0..<2 {
                let bulk = try server.request("POST", "/rep/_bulk_docs", as: admin, json: docs)
                #expect(bulk.status == 201 && bulk.json.arrayValue?.isEmpty == true, "\(bulk)")
            }
            let after = try server.request(
                "POST", "/rep/_revs_diff", as: admin, json: #"{"d":["2-\#(h2)","1-\#(h1)","3-\#(h1)"]}"#)
            #expect(after.status == 200, "\(after)")
            #expect(after.json["d"]?["missing"]?.arrayValue?.compactMap(\.stringValue) == ["3-\(h1)"])
            #expect(after.json["d"]?["possible_ancestors"]?[0]?.stringValue == "2-\(h2)")
            let none = try server.request("POST", "/rep/_revs_diff", as: admin, json: #"{"d":["2-\#(h2)"]}"#)
            #expect(none.json.objectValue?.count == 0, "\(none)")
            let get = try server.request(
                "POST", "/rep/_bulk_get?revs=true", as: admin,
                json: #"{"docs":[{"id":"d","rev":"2-\#(h2)"},{"id":"nope"}]}"#)
            #expect(get.status == 200, "\(get)")
            let ok = get.json["results"]?[0]?["docs"]?[0]?["ok"]
            #expect(ok?["_rev"]?.stringValue == "2-\(h2)" && ok?["v"]?.intValue == 2)
            #expect(ok?["_revisions"]?["ids"]?.arrayValue?.count == 2)
            #expect(get.json["results"]?[1]?["docs"]?[0]?["error"]?["error"]?.stringValue == "not_found")
            let missing = try server.request(
                "POST", "/rep/_missing_revs", as: admin, json: #"{"d":["2-\#(h2)","3-\#(h1)"]}"#)
            #expect(missing.json["missing_revs"]?["d"]?[0]?.stringValue == "3-\(h1)", "\(missing)")
            let commit = try server.request("POST", "/rep/_ensure_full_commit", as: admin, json: "")
            #expect(commit.status == 201 && commit.json["ok"]?.boolValue == true, "\(commit)")
            let noDocs = try server.request("POST", "/rep/_bulk_docs", as: admin, json: #"{"nodocs":[]}"#)
            #expect(noDocs.status == 400 && noDocs.error == "bad_request", "\(noDocs)")
        }
    }
}
