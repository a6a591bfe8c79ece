import Callbacks
import Foundation
import Synchronization
import Testing

@testable import PhotoDrop

/// The one-time token in the phone's QR code, traded by the drop page for a drop session.
@Suite struct SignInTokensTests {
    static let token = Array("0123456789abcdef0123456789abcdef".utf8)

    static func opened(httpsOnly: Bool = false) -> SignInTokens {
        let tokens = SignInTokens(token: token)
        tokens.open(user: "drop-1", httpsOnly: httpsOnly)
        return tokens
    }

    @Test func theRightTokenSignsInOnceAndTheNextTokenIsShown() {
        let tokens = Self.opened()
        let next = Mutex<[String]>([])
        tokens.onUse.set { token in next.withLock { $0.append(token) } }
        guard case .accepted(let user, let following) = tokens.redeem(Self.token, secure: false) else {
            Issue.record("the right token was refused")
            return
        }
        #expect(user == "drop-1")
        #expect(following != String(decoding: Self.token, as: UTF8.self))
        #expect(tokens.current == following)
        #expect(next.withLock { $0 } == [following], "the session is told the next token to show")
        // The next one signs in the next browser.
        guard case .accepted = tokens.redeem(Array(following.utf8), secure: false) else {
            Issue.record("the next token was refused")
            return
        }
    }

    @Test func tokenReuseIsRefusedAsUsedAndNotCountedAsAGuess() {
        let tokens = Self.opened()
        guard case .accepted = tokens.redeem(Self.token, secure: false) else {
            Issue.record("the right token was refused")
            return
        }
        for _ in 0..<(SignInTokens.maxWrongTokens * 3) {
            #expect(tokens.redeem(Self.token, secure: false) == .used)
        }
        #expect(tokens.isOpen, "replaying a used token (an old photo of the screen) does not close sign-in")
        guard case .accepted = tokens.redeem(Array(tokens.current.utf8), secure: false) else {
            Issue.record("the current token stopped working")
            return
        }
    }

    @Test func tokenGuessingIsStoppedAfterTenWrongTokensEvenForTheRightOne() {
        let tokens = Self.opened()
        let spent = Mutex(0)
        tokens.onSpent.set { _ in spent.withLock { $0 += 1 } }
        for n in 1..<SignInTokens.maxWrongTokens {
            let guess = Array(String(repeating: "f", count: 31).utf8) + [UInt8(ascii: "0") + UInt8(n % 10)]
            #expect(tokens.redeem(guess, secure: false) == .wrong(left: SignInTokens.maxWrongTokens - n))
        }
        #expect(tokens.redeem(Array(String(repeating: "e", count: 32).utf8), secure: false) == .spent)
        #expect(spent.withLock { $0 } == 1, "the session is told once")
        // Bounded, not slowed: the right token no longer works either, and nothing is counted any more.
        #expect(tokens.redeem(Self.token, secure: false) == .spent)
        #expect(!tokens.isOpen)
        #expect(spent.withLock { $0 } == 1)
    }

    @Test func tokenGuessingInParallelIsCountedExactly() async {
        let tokens = Self.opened()
        let outcomes = await withTaskGroup(of: SignInTokens.Outcome.self) { group in
            for n in 0..<200 {
                group.addTask {
                    let guess = Array(String(format: "%032x", n + 1).utf8)
                    return tokens.redeem(guess, secure: false)
                }
            }
            var all: [SignInTokens.Outcome] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let wrong = outcomes.filter { if case .wrong = $0 { true } else { false } }.count
        #expect(wrong == SignInTokens.maxWrongTokens - 1)
        #expect(outcomes.filter { $0 == .spent }.count == 200 - wrong)
        #expect(tokens.redeem(Self.token, secure: false) == .spent)
    }

    @Test func tokenLookalikesAreComparedByBytes() {
        let tokens = Self.opened()
        // Upper case, a fullwidth digit, a trailing newline, a prefix, the token twice: none is the token.
        let upper = Array("0123456789ABCDEF0123456789ABCDEF".utf8)
        let fullwidth = Array("０123456789abcdef0123456789abcdef".utf8)
        for posted in [upper, fullwidth, Self.token + [0x0A], Array(Self.token.prefix(31)), Self.token + Self.token] {
            let outcome = tokens.redeem(posted, secure: false)
            #expect(outcome == .malformed || outcome == .wrong(left: SignInTokens.maxWrongTokens - 1), "\(posted)")
            if case .accepted = outcome { Issue.record("a lookalike signed in") }
        }
        #expect(tokens.redeem([], secure: false) == .malformed)
        #expect(tokens.redeem(Array(repeating: UInt8(ascii: "a"), count: 1 << 20), secure: false) == .malformed)
    }

    @Test func tokensOverPlainHTTPAreRefusedUnreadWhenTheDropHasTLS() {
        let tokens = Self.opened(httpsOnly: true)
        #expect(tokens.redeem(Self.token, secure: false) == .insecure)
        #expect(tokens.isOpen)
        guard case .accepted = tokens.redeem(Self.token, secure: true) else {
            Issue.record("refused over HTTPS")
            return
        }
    }

    @Test func tokenAfterReceiveEndsGetsNothing() {
        let unopened = SignInTokens(token: Self.token)
        #expect(unopened.redeem(Self.token, secure: false) == .closed)
        let tokens = Self.opened()
        tokens.close()
        #expect(tokens.redeem(Self.token, secure: false) == .closed)
        #expect(!tokens.isOpen)
    }

    @Test func randomTokensAre128BitsOfLowercaseHex() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let token = SignInTokens().current
            #expect(SignInTokens.wellFormed(Array(token.utf8)) != nil)
            seen.insert(token)
        }
        #expect(seen.count == 1000)
    }
}
