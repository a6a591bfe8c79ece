import Callbacks
import CouchCrypto
import CouchServer
import CouchWire
import Synchronization

/// The one-time sign-in token in the phone's QR code (`http://host:port/_photos/#signin=TOKEN`), which the drop
/// page trades for a drop session (`POST /_photos/api/signin`): scan and send, no typing.
///
/// - **Where it travels.** In the URL's fragment, which a browser never sends: it is in no request line, no log
///   (`--log-level info` logs request lines), no `Referer`, and a link previewer that fetches the URL gets the page
///   without it. Only the page's script reads it, removes it from the address bar and history, and posts it.
/// - **Its life.** One token signs in one browser: the first exchange spends it, and the session makes the next
///   one at once (`receive` prints the new QR code and rewrites `--qr-png`). A spent token replayed (a second
///   browser, an old photo of the screen) is refused as used. Every token ends with the session.
/// - **Guessing.** 128 random bits, compared in constant time by bytes. Guessing is bounded, not just slowed: after
///   `maxWrongTokens` wrong tokens in all (from any address), sign-in by token stops for the rest of the session
///   (the name and password, the apps' URL and the code still work), so a guesser's chance is at most
///   `maxWrongTokens` / 2^128. A used token is not a guess: the last `rememberedUsed` are known as used (by their
///   SHA-256) and are refused as such without counting.
package final class SignInTokens: Sendable {
    /// Random bytes of a token (written as hex, so twice as many characters): 128 bits.
    static let tokenBytes = 16
    /// Wrong tokens accepted in a session before sign-in by token closes.
    package static let maxWrongTokens = 10
    /// Spent tokens remembered as used (each a SHA-256); older ones are then merely wrong.
    static let rememberedUsed = 64

    /// What a posted token gets.
    package enum Outcome: Sendable, Equatable {
        /// Signed in as the session's drop account; `next` is the token the QR code shows from now on.
        case accepted(user: String, next: String)
        /// A token that signed a browser in already.
        case used
        /// Wrong; this many more wrong tokens are allowed.
        case wrong(left: Int)
        /// Too many wrong tokens: sign-in by token is closed for the session.
        case spent
        /// Not a token at all (wrong length or characters): nothing is counted, as it cannot match.
        case malformed
        /// The session has no drop account yet (or any more).
        case closed
        /// Sent over plain HTTP to a drop whose credentials work only over HTTPS: refused unread.
        case insecure
        /// (Inside `redeem` only) the wrong token that closes sign-in by token; answered as `spent`.
        case closing
    }

    private struct State {
        var current: [UInt8]
        var used: [[UInt8]] = []
        var wrong = 0
        var user: String?
        var httpsOnly = false
        var facts = Facts()
    }

    /// What the drop page shows once signed in: when the session ends and the certificate to compare.
    package struct Facts: Sendable, Equatable {
        /// ISO 8601.
        package var expires = ""
        /// The HTTPS certificate's SHA-256 fingerprint, `AB:CD:…`; nil without TLS.
        package var fingerprint: String?

        package init(expires: String = "", fingerprint: String? = nil) {
            self.expires = expires
            self.fingerprint = fingerprint
        }
    }

    private let state: Mutex<State>
    /// Told the next token after each sign-in (the session shows its QR code).
    package let onUse = CallbackSlot<String>()
    /// Told when too many wrong tokens closed sign-in by token.
    package let onSpent = CallbackSlot<Void>()

    /// A random first token, or `token` (tests).
    package init(token: [UInt8]? = nil) {
        state = Mutex(State(current: token ?? Self.randomToken()))
    }

    static func randomToken() -> [UInt8] { Array(Secrets.randomBytes(tokenBytes).hexString.utf8) }

    /// The token the QR code shows now.
    package var current: String { state.withLock { String(decoding: $0.current, as: UTF8.self) } }

    /// Tokens sign in as `user` from now on; with `httpsOnly`, a token posted over plain HTTP is refused unread.
    package func open(user: String, httpsOnly: Bool, facts: Facts = Facts()) {
        state.withLock {
            $0.user = user
            $0.httpsOnly = httpsOnly
            $0.facts = facts
        }
    }

    package var facts: Facts { state.withLock { $0.facts } }

    /// Ends sign-in by token (the session is over).
    package func close() {
        state.withLock { $0.user = nil }
    }

    /// Whether sign-in by token still works (false once closed or after too many wrong tokens).
    package var isOpen: Bool { state.withLock { $0.user != nil && $0.wrong < Self.maxWrongTokens } }

    /// A posted token's bytes when it has a token's shape: `2 * tokenBytes` lowercase hex digits.
    static func wellFormed(_ posted: [UInt8]) -> [UInt8]? {
        guard posted.count == 2 * tokenBytes else { return nil }
        let hex = posted.allSatisfy {
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
        }
        return hex ? posted : nil
    }

    /// Checks a posted token (constant time in its bytes), spending it when right and counting it when wrong; tells
    /// `onUse` the next token after a sign-in, and `onSpent` when this wrong token closed sign-in by token.
    /// - Parameter secure: whether it came over HTTPS.
    package func redeem(_ posted: [UInt8], secure: Bool) -> Outcome {
        guard let candidate = Self.wellFormed(posted) else { return .malformed }
        let digest = Digest.hash(.sha256, candidate)
        let outcome = state.withLock { state -> Outcome in
            guard let user = state.user else { return .closed }
            guard secure || !state.httpsOnly else { return .insecure }
            guard state.wrong < Self.maxWrongTokens else { return .spent }
            if Secrets.constantTimeEqual(candidate, state.current) {
                state.used.append(digest)
                if state.used.count > Self.rememberedUsed { state.used.removeFirst() }
                state.current = Self.randomToken()
                return .accepted(user: user, next: String(decoding: state.current, as: UTF8.self))
            }
            // Every remembered digest is compared, so the time says nothing about which one matched.
            var wasUsed = false
            for spent in state.used where Secrets.constantTimeEqual(spent, digest) { wasUsed = true }
            if wasUsed { return .used }
            state.wrong += 1
            return state.wrong < Self.maxWrongTokens ? .wrong(left: Self.maxWrongTokens - state.wrong) : .closing
        }
        switch outcome {
        case .accepted(_, let next): onUse(next)
        case .closing:
            onSpent(())
            return .spent
        default: break
        }
        return outcome
    }
}
