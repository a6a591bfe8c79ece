import CouchCrypto
import CouchServer
import CouchWire
import Synchronization

/// The short code `couchlite receive` shows beside its QR code, which `couchlite push DIR --to NAME` trades for the
/// session's one-time credentials (`POST /_photos/api/pair`). An announcement on the LAN grants nothing: only
/// someone who can read the receiving screen (or scan the QR) can send.
///
/// Eight characters of Crockford's base32 (no I, L, O, U: nothing to confuse when typing), 40 bits. Guessing is
/// bounded, not just slowed: after `maxWrongCodes` wrong codes in all (from any address, so many addresses do not
/// multiply the guesses) the code stops working for the rest of the session, and the URL and the QR code remain.
/// A guesser's chance is then at most `maxWrongCodes` / 2^40 (about 1 in 10^11); what it costs the receiver is
/// the code, never the session.
package final class PairingCode: Sendable {
    /// Crockford's base32 alphabet: digits and upper-case letters without I, L, O and U.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let length = 8
    /// Wrong codes accepted in a session before the code is spent.
    package static let maxWrongCodes = 10

    /// What a typed code gets.
    package enum Outcome: Sendable, Equatable {
        /// The session's one-time user name and password.
        case accepted(user: String, password: String)
        /// Wrong; this many more wrong codes are allowed.
        case wrong(left: Int)
        /// Too many wrong codes: the code no longer works, whatever is typed.
        case spent
        /// Not a code at all (wrong length or characters): nothing is counted, as it cannot match.
        case malformed
        /// The session has no credentials yet (or any more).
        case closed
        /// Sent over plain HTTP to a drop that serves HTTPS (the answer holds a password): refused unread.
        case insecure
    }

    private struct State {
        var wrong = 0
        var credentials: (user: String, password: String)?
        var httpsOnly = false
    }

    /// The code, as the alphabet's bytes (no separator).
    let code: [UInt8]
    private let state = Mutex(State())

    /// A random code, or `code` (tests).
    package init(code: [UInt8]? = nil) {
        if let code {
            self.code = code
        } else {
            // 256 is a multiple of 32, so `byte % 32` is uniform.
            self.code = Secrets.randomBytes(Self.length).map { Self.alphabet[Int($0 % 32)] }
        }
    }

    /// The code as shown: `ABCD-EFGH`.
    package var display: String {
        String(decoding: code.prefix(4), as: UTF8.self) + "-" + String(decoding: code.dropFirst(4), as: UTF8.self)
    }

    /// The credentials the code stands for, once the session has made them; with `httpsOnly`, a code sent over
    /// plain HTTP is refused unread.
    package func open(user: String, password: String, httpsOnly: Bool) {
        state.withLock {
            $0.credentials = (user, password)
            $0.httpsOnly = httpsOnly
        }
    }

    package func close() {
        state.withLock { $0.credentials = nil }
    }

    /// A typed code in the alphabet's bytes: letters upper-cased, `-` and spaces dropped, and the letters Crockford's
    /// base32 reads as digits (O → 0, I and L → 1) read so; nil when it is not `length` characters of the alphabet.
    /// Bounded: more than 64 bytes typed is not a code.
    static func normalized(_ typed: String) -> [UInt8]? {
        let bytes = Array(typed.utf8)
        guard bytes.count <= 64 else { return nil }
        var result: [UInt8] = []
        for byte in bytes {
            var upper = byte
            if upper >= UInt8(ascii: "a") && upper <= UInt8(ascii: "z") { upper -= 32 }
            switch upper {
            case UInt8(ascii: "-"), UInt8(ascii: " "): continue
            case UInt8(ascii: "O"): result.append(UInt8(ascii: "0"))
            case UInt8(ascii: "I"), UInt8(ascii: "L"): result.append(UInt8(ascii: "1"))
            default:
                guard alphabet.contains(upper) else { return nil }
                result.append(upper)
            }
        }
        return result.count == length ? result : nil
    }

    /// Checks a typed code (constant time in its bytes), counting it when it is wrong.
    /// - Parameter secure: whether it came over HTTPS.
    package func redeem(_ typed: String, secure: Bool) -> Outcome {
        guard let candidate = Self.normalized(typed) else { return .malformed }
        return state.withLock { state in
            guard let credentials = state.credentials else { return .closed }
            guard secure || !state.httpsOnly else { return .insecure }
            guard state.wrong < Self.maxWrongCodes else { return .spent }
            guard Secrets.constantTimeEqual(candidate, code) else {
                state.wrong += 1
                return state.wrong < Self.maxWrongCodes ? .wrong(left: Self.maxWrongCodes - state.wrong) : .spent
            }
            return .accepted(user: credentials.user, password: credentials.password)
        }
    }
}

/// `POST /_photos/api/pair` with the header `X-PhotoDrop-Code: ABCD-EFGH`: the session's one-time credentials for
/// the right code (`PairingCode`). Over HTTPS only when the drop has TLS (the answer holds a password).
package struct PairingRoutes: RouteCollection {
    package static let header = "X-PhotoDrop-Code"

    let code: PairingCode
    let database: String

    package init(code: PairingCode, database: String) {
        self.code = code
        self.database = database
    }

    package var routes: [Route] {
        [
            Route([.POST], "/_photos/api/pair", .anyone, drop: .open) { c in
                guard let typed = c.request.head.headers[Self.header] else {
                    throw CouchError.badRequest("Send the code shown by couchlite receive in \(Self.header)")
                }
                switch code.redeem(typed, secure: c.request.head.isSecure) {
                case .accepted(let user, let password):
                    return .json(
                        .ok,
                        .object(
                            JSONObject([
                                ("ok", .bool(true)), ("user", .string(user)), ("password", .string(password)),
                                ("db", .string(database)),
                            ])))
                case .wrong(let left):
                    throw CouchError.unauthorized("Wrong code (\(left) more wrong codes and it stops working)")
                case .spent:
                    throw CouchError.forbidden(
                        "Too many wrong codes: the code no longer works; use the URL or the QR code of the receiver")
                case .malformed:
                    throw CouchError.badRequest("A code is 8 letters and digits, like ABCD-2345")
                case .closed:
                    throw CouchError.unauthorized("The session is over")
                case .insecure:
                    throw CouchError.forbidden("The code is only accepted over https://")
                }
            }
        ]
    }
}
