import Testing

@testable import CouchServer

@Suite struct TemporaryAccountsTests {
    @Test func namesAreComparedByBytesNotByUnicodeEquivalence() {
        let accounts = TemporaryAccounts(identities: ServerIdentities())
        accounts.add(name: "caf\u{E9}", password: Array("secret".utf8), database: "drop", expires: .now + .seconds(60))
        #expect(accounts.account(named: "caf\u{E9}")?.scope == "drop")
        #expect(accounts.account(named: "cafe\u{301}") == nil)
        #expect(accounts.account(named: "CAF\u{C9}") == nil)
    }

    @Test func onlyTheHashIsKept() throws {
        let accounts = TemporaryAccounts(identities: ServerIdentities())
        accounts.add(name: "drop-1", password: Array("secret".utf8), database: "d", expires: .now + .seconds(60))
        let account = try #require(accounts.account(named: "drop-1"))
        #expect(
            account.hash.verify(Array("secret".utf8), maxIterations: 1_000_000)
                && !account.hash.verify(Array("Secret".utf8), maxIterations: 1_000_000))
        #expect(!account.hash.derivedKey.contains("secret") && account.roles.isEmpty)
    }

    @Test func expiredAndRevokedAccountsAreGone() {
        let accounts = TemporaryAccounts(identities: ServerIdentities())
        accounts.add(name: "old", password: [1], database: "d", expires: .now - .seconds(1))
        accounts.add(name: "live", password: [1], database: "d", expires: .now + .seconds(60))
        #expect(accounts.account(named: "old") == nil && accounts.account(named: "live") != nil)
        accounts.revoke("live")
        #expect(accounts.account(named: "live") == nil && accounts.contains("live"))
    }

    @Test func activityCountsCheckpointsAndWrites() throws {
        let server = try InProcessServer()
        defer { server.shutdown() }
        func drop(_ method: String, _ segments: [String]) throws -> DropScope {
            try TemporaryAccountsTests.drop(server.app.router, method, segments)
        }
        let accounts = TemporaryAccounts(identities: ServerIdentities())
        accounts.add(name: "u", password: [1], database: "d", expires: .now + .seconds(60))
        let user = UserContext(name: "u", roles: [], handler: "default", scope: "d")
        let put = try #require(accounts.begin(user, method: .PUT, drop: try drop("PUT", ["d", "_local", "x"])))
        #expect(accounts.activity(of: "u")?.inFlight == 1)
        put.end(status: 201)
        accounts.begin(user, method: .POST, drop: try drop("POST", ["d", "_bulk_docs"]))?.end(status: 201)
        accounts.begin(user, method: .PUT, drop: try drop("PUT", ["d", "doc"]))?.end(status: 403)
        let activity = try #require(accounts.activity(of: "u"))
        #expect(activity.checkpointed && activity.writes == 1 && activity.inFlight == 0 && activity.lastEnded != nil)
        let anonymous = UserContext(name: "u", roles: [], handler: nil)
        #expect(accounts.begin(anonymous, method: .GET, drop: try drop("GET", [])) == nil)
    }

    /// What the route table lets the drop credentials do on a request.
    private static func drop(_ router: Router, _ method: String, _ segments: [String]) throws -> DropScope {
        guard case .route(let route, _) = router.resolve(method: method, segments: segments) else {
            throw RouteMissing(path: segments.joined(separator: "/"))
        }
        return route.drop
    }

    private struct RouteMissing: Error {
        let path: String
    }
}
