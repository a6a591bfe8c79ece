import CouchWire
import Testing

@testable import CouchServer

/// `/`, `/_up`, `/_uuids` and `/_all_dbs` through the in-process server (conformance/test_server.py).
@Suite struct ServerHandlersTests {
    @Test func welcomeAndUp() throws {
        try InProcessServer.with { server in
            let root = try server.request("GET", "/")
            #expect(root.status == 200)
            #expect(root.json["couchdb"]?.stringValue == "Welcome")
            #expect(root.json["uuid"]?.stringValue?.utf8.count == 32)
            #expect(root.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(root.header("Cache-Control") == "must-revalidate")
            let again = try server.request("GET", "/")
            #expect(again.json["uuid"]?.stringValue == root.json["uuid"]?.stringValue)
            let up = try server.request("GET", "/_up")
            #expect(up.status == 200 && up.json["status"]?.stringValue == "ok")
        }
    }

    @Test func uuidsCountBounds() throws {
        try InProcessServer.with { server in
            let one = try server.request("GET", "/_uuids")
            #expect(one.status == 200 && one.json["uuids"]?.arrayValue?.count == 1)
            let five = try server.request("GET", "/_uuids?count=5")
            let uuids = five.json["uuids"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(five.status == 200 && uuids.count == 5 && Set(uuids).count == 5)
            #expect(uuids.allSatisfy { $0.utf8.count == 32 })
            // CouchDB's default uuids/max_count is 1000.
            let most = try server.request("GET", "/_uuids?count=1000")
            #expect(most.status == 200 && most.json["uuids"]?.arrayValue?.count == 1000)
            let tooMany = try server.request("GET", "/_uuids?count=1001")
            #expect(tooMany.status == 400 && tooMany.error == "bad_request", "\(tooMany)")
        }
    }

    @Test func allDatabasesIsForServerAdminsOnly() throws {
        try InProcessServer.with { server in
            try server.createDatabase("listed")
            let user = try server.createUser("alice")
            for who in [nil, user] {
                let r = try server.request("GET", "/_all_dbs", as: who)
                // chttpd's require_admin answers 401 even to a logged-in user.
                #expect(r.status == 401, "\(r)")
                #expect(r.error == "unauthorized" && r.reason == "You are not a server admin.")
            }
            let r = try server.request("GET", "/_all_dbs", as: InProcessServer.admin)
            let names = r.json.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(r.status == 200 && names.contains("listed") && names == names.sorted(), "\(r)")
        }
    }
}
