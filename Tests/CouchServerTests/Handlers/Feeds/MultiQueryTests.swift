import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// `…/queries` with hostile bodies: what is not a query is refused before any answer, and many queries stream as
/// many results.
@Suite struct MultiQueryTests {
    @Test func queriesThatAreNotObjectsAreRefusedBeforeAnyResult() throws {
        try InProcessServer.with { server in
            try server.createDatabase("db")
            for body in [#"{"queries":[{},1]}"#, #"{"queries":[null]}"#, #"{"queries":["limit=1"]}"#] {
                let r = try server.request("POST", "/db/_all_docs/queries", as: InProcessServer.admin, json: body)
                #expect(r.status == 400 && r.error == "bad_request", "\(body): \(r)")
            }
        }
    }

    @Test func aQueryWithAWrongTypeIsAParseErrorNotACrash() throws {
        try InProcessServer.with { server in
            try server.createDatabase("db")
            for query in [#"{"limit":"ten"}"#, #"{"skip":[]}"#, #"{"descending":{"a":1}}"#, #"{"keys":"a"}"#] {
                let body = #"{"queries":[{},"# + query + "]}"
                let r = try server.request("POST", "/db/_all_docs/queries", as: InProcessServer.admin, json: body)
                #expect(r.status == 400, "\(query): \(r)")
            }
        }
    }

    @Test func aThousandQueriesAreAThousandResults() throws {
        try InProcessServer.with { server in
            try server.createDatabase("db")
            let body = #"{"queries":["# + Array(repeating: #"{"limit":0}"#, count: 1_000).joined(separator: ",") + "]}"
            let r = try server.request("POST", "/db/_all_docs/queries", as: InProcessServer.admin, json: body)
            #expect(r.status == 200)
            let results = try JSON.parse(r.body)["results"]?.arrayValue
            #expect(results?.count == 1_000)
            #expect(results?.first == ["total_rows": 0, "offset": 0, "rows": []])
        }
    }
}
