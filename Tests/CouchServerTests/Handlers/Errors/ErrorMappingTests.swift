import CouchWire
import Testing

@testable import CouchServer

/// How refusals reach the wire: 405 from the table with `Allow`, 413 from the head, bad paths, unknown hosts
/// (conformance/test_server.py, test_node_metrics.py, test_security_resources.py, e2e host allow-list).
@Suite struct ErrorMappingTests {
    @Test func wrongMethodIs405WithAllowAndTheTablesReason() throws {
        try InProcessServer.with { server in
            let admin = InProcessServer.admin
            try server.createDatabase("db")
            // (method, path, CouchDB's list: the Allow header, and the reason "Only <list> allowed")
            let cases: [(String, String, String)] = [
                ("DELETE", "/_all_dbs", "GET,HEAD"),
                ("POST", "/_uuids", "GET"),
                ("PUT", "/_session", "GET,HEAD,POST,DELETE"),
                ("GET", "/_replicate", "POST"),
                ("POST", "/_node/_local/_stats", "GET"),
                ("PUT", "/_node/_local/_stats/couchdb/request_time", "GET"),
                ("POST", "/_membership", "GET"),
                ("PUT", "/db/_changes", "GET,POST,HEAD"),
                ("GET", "/db/_bulk_docs", "POST"),
                ("GET", "/db/_revs_diff", "POST"),
                ("DELETE", "/db/_security", "PUT,GET"),
                ("POST", "/db/_design/d/_info", "GET"),
                ("PUT", "/db/_design/d/_view/v", "GET,POST,HEAD"),
                ("COPY", "/db/_local/x", "DELETE,GET,HEAD,POST,PUT"),
                ("POST", "/db/doc/att", "DELETE,GET,HEAD,PUT"),
                ("COPY", "/db", "DELETE,GET,HEAD,POST"),
            ]
            for (method, path, allow) in cases {
                let r = try server.request(method, path, as: admin)
                #expect(r.status == 405, "\(method) \(path): \(r)")
                #expect(
                    r.error == "method_not_allowed" && r.reason == "Only \(allow) allowed", "\(method) \(path): \(r)")
                #expect(r.header("Allow") == allow, "\(method) \(path): Allow \(r.header("Allow") ?? "-")")
                #expect(r.header("Content-Type")?.hasPrefix("application/json") == true)
            }
        }
    }

    /// A 405 tells nobody more than a 401 would: the path's least demanding rule is checked first.
    @Test func wrongMethodIsAuthorizedFirst() throws {
        try InProcessServer.with { server in
            try server.createDatabase("db")
            let allDbs = try server.request("DELETE", "/_all_dbs")
            #expect(allDbs.status == 401 && allDbs.reason == "You are not a server admin.", "\(allDbs)")
            let changes = try server.request("PUT", "/db/_changes")
            #expect(changes.status == 401 && changes.reason == "You are not authorized to access this db.")
            let missing = try server.request("PUT", "/nope/_changes", as: InProcessServer.admin)
            #expect(missing.status == 404 && missing.reason == "Database does not exist.", "\(missing)")
        }
    }

    @Test func unknownMethodIs405() throws {
        try InProcessServer.with { server in
            try server.createDatabase("db")
            for (method, path) in [("PATCH", "/db/doc"), ("get", "/"), ("PROPFIND", "/_all_dbs")] {
                let r = try server.request(method, path, as: InProcessServer.admin)
                #expect(r.status == 405 && r.error == "method_not_allowed", "\(method) \(path): \(r)")
                #expect(r.header("Allow") != nil)
            }
        }
    }

    /// An anonymous body over 1 MiB is refused from its declared length, before any of it is read: the test
    /// declares the length but holds none of the bytes, so a server that read the body first would fail on them
    /// (the client gone) instead of answering 413.
    @Test func anonymousBodyOverOneMiBIs413FromTheHead() throws {
        try InProcessServer.with { server in
            try server.createDatabase("pub")
            let open = #"{"admins":{"names":[],"roles":[]},"members":{"names":[],"roles":[]}}"#
            let opened = try server.request("PUT", "/pub/_security", as: InProcessServer.admin, json: open)
            #expect(opened.status == 200, "\(opened)")
            for path in ["/pub/_bulk_docs", "/pub/doc", "/pub"] {
                let method = path == "/pub/doc" ? "PUT" : "POST"
                let r = try server.request(
                    method, path, raw: [], declaredLength: 1024 * 1024 + 1, contentType: "application/json")
                #expect(r.status == 413 && r.error == "too_large", "\(path): \(r)")
            }
            // A small anonymous write still works.
            let small = try server.request("POST", "/pub", json: #"{"small":true}"#)
            #expect(small.status == 201 || small.status == 202, "\(small)")
            // The server admin's cap is the route's, not the anonymous one.
            let bytes =
                Array(#"{"big":""#.utf8) + [UInt8](repeating: 0x61, count: 1024 * 1024 + 10) + Array(#""}"#.utf8)
            let big = try server.request(
                "PUT", "/pub/big", as: InProcessServer.admin, raw: bytes,
                contentType: "application/json")
            #expect(big.status == 201, "\(big)")
        }
    }

    @Test func badPercentEncodingIs400() throws {
        try InProcessServer.with { server in
            try server.createDatabase("db")
            for path in ["/db/%zz", "/db/%", "/%GGdb", "/db/doc%2"] {
                let r = try server.request("GET", path, as: InProcessServer.admin)
                #expect(r.status == 400 && r.error == "bad_request", "\(path): \(r)")
                #expect(r.reason == "Invalid percent-encoding in URL path", "\(path): \(r)")
            }
            let query = try server.request("GET", "/db/_all_docs?limit=%zz", as: InProcessServer.admin)
            #expect(query.status == 400 && query.reason == "Invalid percent-encoding in query string", "\(query)")
        }
    }

    @Test func aHostNotAllowedIs400BeforeAuthentication() throws {
        try InProcessServer.with(allowedHosts: ["127.0.0.1", "localhost"]) { server in
            for host in ["127.0.0.1", "LOCALHOST", "localhost:5984"] {
                let r = try server.request("GET", "/", host: host)
                #expect(r.status == 200, "\(host): \(r)")
            }
            for host in ["evil.example", "127.0.0.1.evil.example", ""] {
                let r = try server.request("GET", "/_all_dbs", as: InProcessServer.admin, host: host)
                #expect(r.status == 400 && r.error == "bad_request", "\(host): \(r)")
                #expect(!r.text.contains("_users"))
            }
            let none = try server.request("GET", "/", host: nil)
            #expect(none.status == 400, "\(none)")
        }
    }

    @Test func wrongPasswordIs401() throws {
        try InProcessServer.with { server in
            let r = try server.request("GET", "/_all_dbs", as: Credentials("admin", "wrong"))
            #expect(r.status == 401 && r.reason == "Name or password is incorrect.", "\(r)")
        }
    }
}
