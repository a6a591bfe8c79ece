import CouchWire
import Testing

@testable import CouchServer

/// `_users` (couch_users_db): admin-only by default; once opened, one's own document only, design documents
/// never (conformance/test_auth.py).
@Suite struct UsersHandlersTests {
    static let openUsers = #"{"admins":{"names":[],"roles":["_admin"]},"members":{"names":[],"roles":[]}}"#

    @Test func usersIsAdminOnlyByDefault() throws {
        try InProcessServer.with { server in
            let alice = try server.createUser("alice")
            let own = try server.request("GET", "/_users/org.couchdb.user:alice", as: alice)
            #expect(own.status == 403 && own.reason == "You are not allowed to access this db.", "\(own)")
            let anonymous = try server.request("GET", "/_users/org.couchdb.user:alice")
            #expect(anonymous.status == 401 && anonymous.reason == "You are not authorized to access this db.")
            for path in ["/_users/_all_docs", "/_users/_changes"] {
                let r = try server.request("GET", path, as: alice)
                #expect(r.status == 401 && r.reason == "You are not a server admin.", "\(path): \(r)")
            }
            let stored = try server.request("GET", "/_users/org.couchdb.user:alice", as: InProcessServer.admin)
            #expect(stored.status == 200 && stored.json["password"] == nil, "\(stored)")
            #expect(stored.json["password_scheme"]?.stringValue == "pbkdf2")
            let security = try server.request(
                "PUT", "/_users/_security", as: InProcessServer.admin, json: Self.openUsers)
            #expect(security.status == 403, "\(security)")
            #expect(security.reason == "You can't edit the security object of the user database.")
        }
    }

    @Test func anOpenUsersDatabaseShowsEachUserOnlyTheirOwnDocument() throws {
        try InProcessServer.with(usersSecurityEditable: true) { server in
            let opened = try server.request(
                "PUT", "/_users/_security", as: InProcessServer.admin, json: Self.openUsers)
            #expect(opened.status == 200, "\(opened)")
            let alice = try server.createUser("alice")
            let bob = try server.createUser("bob")
            let own = try server.request("GET", "/_users/org.couchdb.user:alice", as: alice)
            #expect(own.status == 200 && own.json["name"]?.stringValue == "alice", "\(own)")
            #expect(own.json["password"] == nil)
            for who in [bob, nil] {
                let other = try server.request("GET", "/_users/org.couchdb.user:alice", as: who)
                #expect(other.status == 404, "\(String(describing: who?.name)): \(other)")
            }
            // Writing someone else's document is as if it did not exist.
            let rev = own.json["_rev"]?.stringValue ?? ""
            let overwrite = try server.request(
                "PUT", "/_users/org.couchdb.user:alice", as: bob,
                json: #"{"_rev":"\#(rev)","name":"alice","roles":[],"type":"user","password":"x"}"#)
            #expect(overwrite.status == 404, "\(overwrite)")
            let design = try server.request("GET", "/_users/_design/_auth", as: alice)
            #expect(design.status == 403 && design.error == "forbidden", "\(design)")
            #expect(design.reason == "Only administrators can view design docs in the users database.")
            let roles = try server.request(
                "PUT", "/_users/org.couchdb.user:carol",
                json: #"{"name":"carol","password":"pw","roles":["boss"],"type":"user"}"#)
            #expect(roles.status == 403 && roles.reason == "Only _admin may set roles", "\(roles)")
            let signup = try server.request(
                "PUT", "/_users/org.couchdb.user:carol",
                json: #"{"name":"carol","password":"pw","roles":[],"type":"user"}"#)
            #expect(signup.status == 201, "\(signup)")
        }
    }
}
