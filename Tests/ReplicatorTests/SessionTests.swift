import Testing

@testable import Replicator

@Suite struct SessionTests {
    @Test func authSessionCookieIsTakenFromSetCookie() {
        #expect(
            Session.cookie(fromSetCookie: "AuthSession=YWRtaW46NkIw; Version=1; Path=/; HttpOnly") == "YWRtaW46NkIw")
        #expect(Session.cookie(fromSetCookie: "Other=1; Path=/") == nil)
        #expect(Session.cookie(fromSetCookie: "AuthSession=; Path=/") == nil)
        #expect(Session.cookie(fromSetCookie: "") == nil)
        #expect(Session.cookie(fromSetCookie: "AuthSessionX=1") == nil)
    }

    @Test func formBodyEscapesEverythingButUnreserved() {
        let session = Session(user: "a&b=c", password: "p ä+%")
        #expect(String(decoding: session.formBody, as: UTF8.self) == "name=a%26b%3Dc&password=p%20%C3%A4%2B%25")
    }
}
