import Foundation
import Testing

@testable import CouchServer

/// `[chttpd_auth] timeout` = 2^63-1 crashed the server at the next login: the cookie's `now + timeout` overflowed.
/// CouchDB takes any integer there, so couchlite takes it too and holds the lifetime to 2^31-1 s (68 years).
@Suite(.serialized) struct SessionLifetimeTests {
    @Test func attack_a_session_timeout_of_2_63_seconds_does_not_trap() {
        let setting = Limits.live.sessionSeconds
        defer { setting.set(setting.initial) }
        let now = Int(Date().timeIntervalSince1970)
        for timeout in [Int.max, Int(Int32.max) + 1, Int.max / 2] {
            setting.set(timeout)
            #expect(AuthLimits.sessionSeconds == AuthLimits.longestSessionSeconds)
            let header = SessionCookie.header("abc", now: now)
            #expect(header.contains("Max-Age=\(Int32.max);"), "\(header)")
            // The Expires date is a real one, 68 years on.
            let year = Calendar(identifier: .gregorian).component(.year, from: Date()) + 68
            #expect(header.contains("-\(year) ") || header.contains("-\(year - 1) "), "\(header)")
        }
        setting.set(600)
        #expect(SessionCookie.header("abc", now: now).contains("Max-Age=600;"))
    }
}
