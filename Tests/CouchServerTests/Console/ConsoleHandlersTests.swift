import Testing

@testable import CouchServer

/// The console's rows: `/_utils` redirected as CouchDB redirects it, its files public with their CSP, and nothing
/// else under `/_utils`.
@Suite struct ConsoleHandlersTests {
    @Test func utilsRedirectsToUtilsSlashOnTheRequestsOwnHost() throws {
        try InProcessServer.with { server in
            let r = try server.request("GET", "/_utils", host: "127.0.0.1:5984")
            #expect(r.status == 301)
            #expect(r.header("Location") == "http://127.0.0.1:5984/_utils/")
            #expect(r.body.isEmpty)
        }
    }

    @Test func aHostThatCouldBreakTheLocationGivesARelativeOne() throws {
        try InProcessServer.with { server in
            for host in ["", "a b", "evil.example/x"] {
                let r = try server.request("GET", "/_utils", host: host)
                guard r.status == 301 else { continue }  // a Host the allow-list refuses is 400, also fine
                #expect(r.header("Location") == "/_utils/", "\(host)")
            }
        }
    }

    @Test func theFilesArePublicWithAStrictPolicy() throws {
        try InProcessServer.with { server in
            for path in ["/_utils/", "/_utils/index.html", "/_utils/console.js", "/_utils/console.css"] {
                let r = try server.request("GET", path)
                #expect(r.status == 200, "\(path)")
                #expect(!r.body.isEmpty, "\(path)")
                #expect(r.header("Content-Security-Policy") == ConsoleAssets.contentSecurityPolicy, "\(path)")
                #expect(r.header("X-Frame-Options") == "DENY")
            }
            #expect(!ConsoleAssets.contentSecurityPolicy.contains("unsafe"))
        }
    }

    @Test func nothingElseUnderUtilsAndOnlyGetAndHead() throws {
        try InProcessServer.with { server in
            for path in ["/_utils/missing.js", "/_utils/..%2Fconsole.js", "/_utils/a/b", "/_utils/%2e%2e/_all_dbs"] {
                #expect(try server.request("GET", path, as: InProcessServer.admin).status == 404, "\(path)")
            }
            let r = try server.request("POST", "/_utils/", as: InProcessServer.admin, json: "{}")
            #expect(r.status == 405 && r.reason == "Only GET,HEAD allowed")
        }
    }
}
