import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// Who may call what, route by route: an expected matrix written out by hand (an oracle independent of the
/// table's `Access` and `DropScope`), checked through HTTP for anonymous requests, a logged-in stranger, a
/// member of the database, its admin, a server admin and `couchlite receive`'s one-time credentials scoped to
/// that database. Statuses are CouchDB 3.4.3's as conformance/test_auth.py asserts them (401 anonymous / 403
/// logged in for a database's rules, 401 for everyone on server-admin routes and maintenance endpoints);
/// the drop credentials' column is couchlite's own (DropScope: exactly what a push replicator needs).
@Suite struct AuthorizationMatrixTests {
    enum Who: String, CaseIterable {
        case anonymous, stranger, member, dbAdmin, serverAdmin, drop
    }

    /// One row of the matrix: a request and the status each caller gets.
    struct Expectation {
        let method: String
        let path: String
        let body: String?
        let statuses: [Who: Int]

        /// - Parameter s: anonymous, stranger, member, db admin, server admin, drop, in that order.
        init(_ method: String, _ path: String, _ body: String?, _ s: [Int]) {
            self.method = method
            self.path = path
            self.body = body
            statuses = Dictionary(uniqueKeysWithValues: zip(Who.allCases, s))
        }

        init(_ method: String, _ path: String, _ s: [Int]) {
            self.init(method, path, nil, s)
        }
    }

    // The database `m`: members `member`, admins `dbadmin`; it holds `doc` with `att.txt`, `_design/app`,
    // `_local/cp`. `{who}` in a path is replaced by the caller, so writes never collide.
    static let matrix: [Expectation] = [
        // Server routes.
        Expectation("GET", "/", [200, 200, 200, 200, 200, 200]),
        Expectation("GET", "/_up", [200, 200, 200, 200, 200, 403]),
        Expectation("GET", "/_uuids", [200, 200, 200, 200, 200, 403]),
        Expectation("GET", "/_session", [200, 200, 200, 200, 200, 200]),
        Expectation("GET", "/_all_dbs", [401, 401, 401, 401, 200, 403]),
        Expectation("GET", "/_active_tasks", [401, 401, 401, 401, 200, 403]),
        Expectation("GET", "/_scheduler/jobs", [401, 401, 401, 401, 200, 403]),
        Expectation("GET", "/_scheduler/jobs/no-such-job", [401, 401, 401, 401, 404, 403]),
        Expectation("GET", "/_membership", [401, 401, 401, 401, 200, 403]),
        Expectation("GET", "/_node/_local", [401, 401, 401, 401, 200, 403]),
        Expectation("GET", "/_node/_local/_stats", [401, 401, 401, 401, 200, 403]),
        Expectation("POST", "/_replicate", "{}", [401, 401, 401, 401, 400, 403]),
        Expectation("GET", "/_photos/api/dbs", [200, 200, 200, 200, 200, 200]),
        // The gallery's resumable uploads: members and the drop credentials start them; an id not one's own is 404.
        Expectation(
            "POST", "/_photos/api/db/m/uploads?name={who}.jpg&length=3&sha256=\(String(repeating: "ab", count: 32))",
            [401, 403, 201, 201, 201, 201]),
        Expectation(
            "HEAD", "/_photos/api/db/m/uploads/\(String(repeating: "0", count: 32))", [401, 403, 404, 404, 404, 404]),
        // The gallery's reads and deletes: the database's members, as its documents; never the drop credentials.
        // (`att.txt` is no picture: its tile and preview are the placeholder; a delete without `rev` is CouchDB's 409.)
        Expectation("GET", "/_photos/api/db/m/photos", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/_photos/api/db/m/photo/doc", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/_photos/api/db/m/download/doc/att.txt", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/_photos/api/db/m/thumb/doc/att.txt", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/_photos/api/db/m/preview/doc/att.txt", [401, 403, 200, 200, 200, 403]),
        Expectation("DELETE", "/_photos/api/db/m/doc/none-{who}", [401, 403, 409, 409, 409, 403]),
        // A system database is no album, but who may ask is decided first; a missing one is 404 to everyone.
        Expectation("GET", "/_photos/api/db/_users/photos", [401, 403, 403, 403, 404, 403]),
        Expectation("GET", "/_photos/api/db/missing/photos", [404, 404, 404, 404, 404, 403]),
        // The database.
        Expectation("GET", "/m", [401, 403, 200, 200, 200, 200]),
        Expectation("HEAD", "/m", [401, 403, 200, 200, 200, 200]),
        Expectation("PUT", "/m", [401, 401, 401, 401, 412, 412]),
        Expectation("DELETE", "/m", [401, 401, 401, 401, 0, 403]),
        Expectation("POST", "/m", #"{"_id":"post-{who}"}"#, [401, 403, 201, 201, 201, 403]),
        Expectation("GET", "/m/_security", [401, 403, 200, 200, 200, 403]),
        Expectation("PUT", "/m/_security", security, [401, 403, 403, 200, 200, 403]),
        Expectation("GET", "/m/_revs_limit", [401, 403, 200, 200, 200, 403]),
        Expectation("PUT", "/m/_revs_limit", "1000", [401, 403, 403, 200, 200, 403]),
        Expectation("POST", "/m/_compact", "{}", [401, 401, 401, 202, 202, 403]),
        Expectation("POST", "/m/_view_cleanup", "{}", [401, 401, 401, 202, 202, 403]),
        Expectation("POST", "/m/_ensure_full_commit", "", [401, 403, 201, 201, 201, 201]),
        // Reading documents: members only; never the drop credentials (a phone cannot read others' photos).
        Expectation("GET", "/m/doc", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/m/doc/att.txt", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/m/_design/app", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/m/_all_docs", [401, 403, 200, 200, 200, 403]),
        Expectation("GET", "/m/_changes", [401, 403, 200, 200, 200, 403]),
        Expectation("POST", "/m/_bulk_get", #"{"docs":[{"id":"doc"}]}"#, [401, 403, 200, 200, 200, 403]),
        // What a push replicator does: the drop credentials may.
        Expectation("POST", "/m/_revs_diff", #"{"doc":["9-x"]}"#, [401, 403, 200, 200, 200, 200]),
        Expectation("POST", "/m/_missing_revs", #"{"doc":["9-x"]}"#, [401, 403, 200, 200, 200, 200]),
        Expectation("POST", "/m/_bulk_docs", #"{"docs":[{"_id":"b-{who}"}]}"#, [401, 403, 201, 201, 201, 201]),
        Expectation("PUT", "/m/w-{who}", #"{"by":"{who}"}"#, [401, 403, 201, 201, 201, 201]),
        Expectation("PUT", "/m/_local/cp-{who}", #"{"seq":1}"#, [401, 403, 201, 201, 201, 201]),
        // The drop credentials read back only the `_local` documents they wrote themselves (their checkpoints).
        Expectation("GET", "/m/_local/cp", [401, 403, 200, 200, 200, 404]),
        Expectation("GET", "/m/_local/cp-{who}", [401, 403, 200, 200, 200, 200]),
        // couchlite's own `_local` documents are not the sender's.
        Expectation("PUT", "/m/_local/couchlite-x-{who}", #"{"seq":1}"#, [401, 403, 201, 201, 201, 403]),
        // Writes outside what a push needs.
        Expectation("DELETE", "/m/_local/cp-none", [401, 403, 404, 404, 404, 403]),
        Expectation("PUT", "/m/att-{who}/a.bin", "ab", [401, 403, 201, 201, 201, 403]),
        Expectation("DELETE", "/m/doc", [401, 403, 409, 409, 409, 403]),
        Expectation("COPY", "/m/doc", [401, 403, 400, 400, 400, 403]),
        // Design documents: the database's admins.
        Expectation("PUT", "/m/_design/d-{who}", #"{"views":{}}"#, [401, 403, 403, 201, 201, 403]),
        Expectation("DELETE", "/m/_design/app", [401, 403, 403, 409, 409, 403]),
        Expectation("PUT", "/m/_design/app/a.txt", "ab", [401, 403, 403, 409, 409, 403]),
        Expectation("GET", "/m/_design/app/_view/v", [401, 403, 404, 404, 404, 403]),
        // Paths with no row: refused in the database's namespace.
        Expectation("GET", "/m/_foo", [401, 403, 400, 400, 400, 403]),
        Expectation("GET", "/m/_design", [401, 403, 404, 404, 404, 403]),
        // A missing database is 404 whoever asks (the drop credentials' scope is checked first).
        Expectation("GET", "/missing/doc", [404, 404, 404, 404, 404, 403]),
        // `_users`, admin-only by default.
        Expectation("GET", "/_users", [401, 403, 403, 403, 200, 403]),
        Expectation("GET", "/_users/_all_docs", [401, 401, 401, 401, 200, 403]),
        Expectation("GET", "/_users/org.couchdb.user:member", [401, 403, 403, 403, 200, 403]),
        // Design documents of `_users` are refused to everyone but its admins before they are looked up.
        Expectation("GET", "/_users/_design/none", [401, 403, 403, 403, 404, 403]),
    ]

    static let security = #"{"admins":{"names":["dbadmin"],"roles":[]},"members":{"names":["member"],"roles":[]}}"#

    @Test func everyCallerGetsWhatCouchDBAnswers() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            let stranger = try server.createUser("stranger")
            let member = try server.createUser("member")
            let dbadmin = try server.createUser("dbadmin")
            try server.createDatabase("m")
            try server.setSecurity("m", admins: ["dbadmin"], members: ["member"])
            let doc = try server.request("PUT", "/m/doc", as: admin, json: #"{"v":1}"#)
            let rev = doc.json["rev"]?.stringValue ?? ""
            let att = try server.request("PUT", "/m/doc/att.txt?rev=\(rev)", as: admin, raw: Array("hello".utf8))
            let design = try server.request("PUT", "/m/_design/app", as: admin, json: #"{"views":{}}"#)
            let local = try server.request("PUT", "/m/_local/cp", as: admin, json: #"{"seq":1}"#)
            for setup in [doc, att, design, local] { #expect(setup.status == 201, "setup: \(setup)") }
            let drop = server.addDropCredentials("drop-m", password: "one-time", database: "m")
            let callers: [Who: Credentials?] = [
                .anonymous: nil, .stranger: stranger, .member: member, .dbAdmin: dbadmin, .serverAdmin: admin,
                .drop: drop,
            ]
            for row in Self.matrix {
                for who in Who.allCases {
                    guard let expected = row.statuses[who], expected != 0 else { continue }
                    let path = row.path.replacingOccurrences(of: "{who}", with: who.rawValue.lowercased())
                    let body = row.body?.replacingOccurrences(of: "{who}", with: who.rawValue)
                    let r = try server.request(
                        row.method, path, as: callers[who] ?? nil, json: body, contentType: "application/json")
                    #expect(r.status == expected, "\(row.method) \(path) as \(who): \(r)")
                }
            }
        }
    }

    /// The refusals' bodies, as conformance/test_auth.py asserts them.
    @Test func refusalsNameTheRuleTheyEnforce() throws {
        try InProcessServer.with { server in
            let member = try server.createUser("member")
            try server.createDatabase("m")
            try server.setSecurity("m", admins: ["dbadmin"], members: ["member"])
            let drop = server.addDropCredentials("drop-m", password: "one-time", database: "m")
            let cases: [(String, String, Credentials?, String, String)] = [
                ("GET", "/m", nil, "unauthorized", "You are not authorized to access this db."),
                ("GET", "/m/_all_docs", Credentials("admin", "admin-pw"), "", ""),
                ("PUT", "/m/_design/x", member, "forbidden", "You are not a db or server admin."),
                ("PUT", "/m/_design/x", nil, "unauthorized", "You are not authorized to access this db."),
                ("GET", "/_all_dbs", member, "unauthorized", "You are not a server admin."),
                ("POST", "/m/_compact", member, "unauthorized", "You are not a server or db admin."),
                (
                    "GET", "/_node/_local/_stats", member, "unauthorized",
                    "You are not a server admin or read-only metrics user"
                ),
                ("GET", "/m/doc", drop, "forbidden", "These one-time credentials may only push to the database m."),
                ("PUT", "/m/_local/couchlite-x", drop, "forbidden", "This document is reserved for couchlite."),
                ("PUT", "/m", drop, "file_exists", "The database could not be created, the file already exists."),
            ]
            for (method, path, who, error, reason) in cases where !error.isEmpty {
                let r = try server.request(method, path, as: who, json: "{}")
                #expect(r.error == error && r.reason == reason, "\(method) \(path) as \(who?.name ?? "nobody"): \(r)")
            }
        }
    }

    /// The drop credentials reach nothing of another database, not even what they may do in their own.
    @Test func dropCredentialsAreConfinedToTheirDatabase() throws {
        try InProcessServer.with { server in
            try server.createDatabase("mine")
            try server.createDatabase("theirs")
            let open = #"{"admins":{"names":[],"roles":[]},"members":{"names":[],"roles":[]}}"#
            let opened = try server.request("PUT", "/theirs/_security", as: InProcessServer.admin, json: open)
            #expect(opened.status == 200)
            let drop = server.addDropCredentials("drop-mine", password: "one-time", database: "mine")
            let requests: [(String, String, String?)] = [
                ("GET", "/theirs", nil), ("PUT", "/theirs/doc", "{}"), ("POST", "/theirs/_bulk_docs", #"{"docs":[]}"#),
                ("POST", "/theirs/_revs_diff", "{}"), ("PUT", "/theirs/_local/cp", "{}"),
                ("POST", "/theirs/_ensure_full_commit", ""), ("PUT", "/theirs", nil),
            ]
            for (method, path, body) in requests {
                let r = try server.request(method, path, as: drop, json: body)
                #expect(r.status == 403, "\(method) \(path): \(r)")
                #expect(r.reason == "These one-time credentials may only push to the database mine.")
            }
            // Anonymous requests may write there (the database is public); the credentials are narrower.
            let anonymous = try server.request("PUT", "/theirs/doc", json: "{}")
            #expect(anonymous.status == 201, "\(anonymous)")
            // In its own database the same push succeeds.
            let own = try server.request("PUT", "/mine/doc", as: drop, json: "{}")
            #expect(own.status == 201, "\(own)")
        }
    }
}
