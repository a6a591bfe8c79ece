import CouchWire
import Testing

@testable import CouchServer

/// Creating, reading and deleting databases, and `_security` (conformance/test_databases.py, test_auth.py).
@Suite struct DatabaseHandlersTests {
    @Test func createInfoDelete() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            let created = try server.request("PUT", "/books", as: admin)
            #expect(created.status == 201 && created.json["ok"]?.boolValue == true, "\(created)")
            let info = try server.request("GET", "/books", as: admin)
            #expect(info.status == 200 && info.json["db_name"]?.stringValue == "books", "\(info)")
            #expect(info.json["doc_count"]?.intValue == 0)
            let again = try server.request("PUT", "/books", as: admin)
            #expect(again.status == 412 && again.error == "file_exists", "\(again)")
            #expect(again.reason == "The database could not be created, the file already exists.")
            let deleted = try server.request("DELETE", "/books", as: admin)
            #expect(deleted.status == 200 && deleted.json["ok"]?.boolValue == true, "\(deleted)")
            for method in ["GET", "DELETE"] {
                let missing = try server.request(method, "/books", as: admin)
                #expect(missing.status == 404, "\(method): \(missing)")
                #expect(missing.error == "not_found" && missing.reason == "Database does not exist.")
            }
            let head = try server.request("HEAD", "/books", as: admin)
            #expect(head.status == 404 && head.body.isEmpty)
            let illegal = try server.request("PUT", "/Books", as: admin)
            #expect(illegal.status == 400 && illegal.error == "illegal_database_name", "\(illegal)")
        }
    }

    @Test func aMissingDatabaseIs404ForAnyone() throws {
        try InProcessServer.with { server in
            let r = try server.request("GET", "/nope/doc")
            #expect(r.status == 404 && r.error == "not_found" && r.reason == "Database does not exist.", "\(r)")
        }
    }

    @Test func aNewDatabaseIsAdminOnlyAndItsSecurityIsWrittenByItsAdmins() throws {
        try InProcessServer.with { server in
            try server.createDatabase("sec")
            let member = try server.createUser("member")
            let dbadmin = try server.createUser("dbadmin")
            let security = try server.request("GET", "/sec/_security", as: InProcessServer.admin)
            #expect(security.json["members"]?["roles"]?[0]?.stringValue == "_admin", "\(security)")
            let stranger = try server.request("GET", "/sec", as: member)
            #expect(stranger.status == 403 && stranger.reason == "You are not allowed to access this db.")
            let anonymous = try server.request("GET", "/sec")
            #expect(anonymous.status == 401 && anonymous.reason == "You are not authorized to access this db.")
            try server.setSecurity("sec", admins: ["dbadmin"], members: ["member"])
            let body = #"{"admins":{"names":["dbadmin"],"roles":[]},"members":{"names":["member"],"roles":[]}}"#
            // couchlite answers a member's write the 403 of a single shard's check_is_admin.
            let byMember = try server.request("PUT", "/sec/_security", as: member, json: body)
            #expect(byMember.status == 403 && byMember.reason == "You are not a db or server admin.", "\(byMember)")
            let byAnonymous = try server.request("PUT", "/sec/_security", json: body)
            #expect(byAnonymous.status == 401, "\(byAnonymous)")
            let byAdmin = try server.request("PUT", "/sec/_security", as: dbadmin, json: body)
            #expect(byAdmin.status == 200 && byAdmin.json["ok"]?.boolValue == true, "\(byAdmin)")
            let bad = try server.request("PUT", "/sec/_security", as: dbadmin, json: #"{"admins":[]}"#)
            #expect(bad.status == 400 && bad.error == "bad_request", "\(bad)")
            let read = try server.request("GET", "/sec/_security", as: member)
            #expect(read.status == 200 && read.json["admins"]?["names"]?[0]?.stringValue == "dbadmin")
        }
    }
}
