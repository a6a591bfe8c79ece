import CouchStore
import CouchWire
import Foundation
import Testing

@testable import CouchServer

/// The drop page's session (`TemporaryAccounts.signInCookie`, issue 36): the drop account's own `AuthSession`
/// cookie, `HttpOnly` and `SameSite=Strict`, living exactly as long as the account: no timeout of its own (a phone
/// idle longer than the session timeout keeps sending) and no refresh (which would turn it into a Lax cookie), and
/// nothing once the account ends.
@Suite struct DropSessionCookieTests {
    func authenticator() throws -> Authenticator {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory + "/databases")
        let (admins, _) = try ServerAdmins.setUp(credentials: "admin:pw", dataDir: directory, iterations: 1000)
        return Authenticator(admins: admins, secret: [7, 7, 7], store: store, iterations: 1000)
    }

    /// The `AuthSession=…` value of a `Set-Cookie` header.
    func value(_ header: String) -> String {
        String(header.split(separator: ";")[0].dropFirst("AuthSession=".count))
    }

    func headers(cookie: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add("Cookie", "AuthSession=\(cookie)")
        return headers
    }

    @Test func theCookieIsStrictHttpOnlyAndKeptUntilTheSessionEnds() throws {
        let auth = try authenticator()
        auth.temporary.add(
            name: "drop-1", password: Array("pw".utf8), database: "photodrop", expires: .now + .seconds(900))
        let header = try #require(auth.temporary.signInCookie(for: "drop-1", secure: true))
        let attributes = header.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        for wanted in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
            #expect(attributes.contains(wanted), "\(header)")
        }
        let maxAge = try #require(attributes.first { $0.hasPrefix("Max-Age=") }.flatMap { Int($0.dropFirst(8)) })
        #expect((895...900).contains(maxAge), "the browser keeps it for the session's 15 minutes, not 10: \(header)")
        let outcome = try auth.authenticate(headers(cookie: value(header)), client: "192.0.2.9")
        #expect(outcome.user.name == "drop-1" && outcome.user.scope == "photodrop" && outcome.user.drop != nil)
        #expect(outcome.refreshedCookie == nil, "never refreshed into a Lax cookie")
    }

    @Test func aDropCookieOlderThanTheSessionTimeoutStillWorksWhileTheAccountLives() throws {
        let auth = try authenticator()
        auth.temporary.add(
            name: "drop-2", password: Array("pw".utf8), database: "photodrop", expires: .now + .seconds(3600))
        let account = try #require(auth.temporary.account(named: "drop-2"))
        // Issued 20 minutes ago: past the 10-minute session timeout of everyone else's cookies.
        let old = SessionCookie.value(
            name: "drop-2", issued: Authenticator.now - 1200, secret: auth.secret, salt: account.hash.salt)
        let outcome = try auth.authenticate(headers(cookie: old), client: nil)
        #expect(outcome.user.name == "drop-2")
        // The same age for a server admin's cookie is expired.
        let admin = try #require(auth.account(named: "admin"))
        let adminCookie = SessionCookie.value(
            name: "admin", issued: Authenticator.now - 1200, secret: auth.secret, salt: admin.hash.salt)
        #expect(try auth.authenticate(headers(cookie: adminCookie), client: nil).user.name == nil)
    }

    @Test func signInCookieAfterReceiveEndsGetsNothing() throws {
        let auth = try authenticator()
        auth.temporary.add(
            name: "drop-3", password: Array("pw".utf8), database: "photodrop", expires: .now + .seconds(900))
        let header = try #require(auth.temporary.signInCookie(for: "drop-3", secure: false))
        auth.temporary.revoke("drop-3")
        #expect(try auth.authenticate(headers(cookie: value(header)), client: nil).user.name == nil)
        #expect(auth.temporary.signInCookie(for: "drop-3", secure: false) == nil, "no cookie for an ended account")
        // An account that expired by its own time is ended too.
        auth.temporary.add(
            name: "drop-4", password: Array("pw".utf8), database: "photodrop", expires: .now + .milliseconds(50))
        let soon = try #require(auth.temporary.signInCookie(for: "drop-4", secure: false))
        Thread.sleep(forTimeInterval: 0.1)
        #expect(try auth.authenticate(headers(cookie: value(soon)), client: nil).user.name == nil)
    }
}
