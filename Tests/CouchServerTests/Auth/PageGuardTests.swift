import CouchWire
import Testing

@testable import CouchServer

/// The cross-site check of every write a session cookie makes (`PageGuard.requireCookieWrite`), with the requests a
/// hostile page can make a browser send, and the ones this server's own pages and real clients send.
@Suite struct PageGuardTests {
    let hosts = HostPolicy(allowedHosts: [], bind: "127.0.0.1")
    let noCORS = CORSPolicy()

    func head(_ method: String, _ headers: [(String, String)]) -> HTTPRequestHead {
        HTTPRequestHead(method: method, target: "/db", headers: HTTPHeaders([("Host", "127.0.0.1:5984")] + headers))
    }

    func refused(_ head: HTTPRequestHead, cors: CORSPolicy? = nil) -> Bool {
        do {
            try PageGuard.requireCookieWrite(head, servedBy: hosts, cors: cors ?? noCORS)
            return false
        } catch {
            return error.status == 403
        }
    }

    @Test func aPageOnAnotherPortOfTheSameHostIsRefused() {
        #expect(refused(head("PUT", [("Origin", "http://127.0.0.1:8080")])))
        #expect(refused(head("DELETE", [("Origin", "http://localhost:5984")])))
    }

    @Test func aDNSRebindingPageWithAMatchingHostIsRefused() {
        let rebound = HTTPRequestHead(
            method: "PUT", target: "/db",
            headers: HTTPHeaders([("Host", "evil.example"), ("Origin", "http://evil.example")]))
        #expect(refused(rebound))
    }

    @Test func aCrossSiteFetchIsRefusedWhateverItsOrigin() {
        #expect(refused(head("PUT", [("Sec-Fetch-Site", "cross-site")])))
        #expect(refused(head("PUT", [("Sec-Fetch-Site", "same-site"), ("Origin", "http://127.0.0.1:5984")])))
    }

    @Test func aFormOrPlainTextPostWithoutOriginIsRefused() {
        for type in [
            "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "TEXT/PLAIN;charset=utf-8",
        ] {
            #expect(refused(head("POST", [("Content-Type", type), ("Content-Length", "10")])), "\(type)")
        }
        #expect(refused(head("POST", [("Content-Length", "10")])), "an untyped body")
        #expect(refused(head("POST", [("Transfer-Encoding", "chunked"), ("Content-Type", "text/plain")])))
    }

    @Test func theServersOwnPageIsTaken() {
        #expect(!refused(head("PUT", [("Origin", "http://127.0.0.1:5984"), ("Sec-Fetch-Site", "same-origin")])))
        #expect(
            !refused(head("POST", [("Origin", "http://127.0.0.1:5984"), ("Content-Type", "text/plain")])),
            "the server's own page may post any body")
    }

    @Test func clientsThatAreNotBrowsersAreTaken() {
        #expect(!refused(head("POST", [("Content-Type", "application/json"), ("Content-Length", "2")])))
        #expect(!refused(head("POST", [("Content-Type", "multipart/related; boundary=x"), ("Content-Length", "9")])))
        #expect(!refused(head("POST", [])), "a bodyless POST (_ensure_full_commit, _sync_shards)")
        #expect(!refused(head("PUT", [("Content-Type", "text/plain")])), "a PUT is never sent cross-origin unasked")
        #expect(
            !refused(head("POST", [("Authorization", "Basic YTpi"), ("Content-Type", "text/plain")])),
            "a client sending its credentials itself")
    }

    @Test func anOriginCORSLetsInWithCredentialsIsTakenAndOnlyThat() {
        let cors = CORSPolicy(origins: ["http://app.example"], credentials: .listed)
        #expect(
            !refused(head("PUT", [("Origin", "http://app.example"), ("Sec-Fetch-Site", "cross-site")]), cors: cors))
        #expect(refused(head("PUT", [("Origin", "http://other.example")]), cors: cors))
        let withoutCredentials = CORSPolicy(origins: ["http://app.example"], credentials: .off)
        #expect(refused(head("PUT", [("Origin", "http://app.example")]), cors: withoutCredentials))
        let wildcard = CORSPolicy(origins: ["*"], credentials: .listed)
        #expect(refused(head("PUT", [("Origin", "http://any.example")]), cors: wildcard))
    }
}
