import CouchServer
import CouchWire
import Foundation

/// `POST /_photos/api/signin` with `{"token":"…"}` (JSON, from the drop page itself): trades the QR code's
/// one-time token (`SignInTokens`) for a drop session, the `AuthSession` cookie of the session's drop account
/// (`HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS, kept until the session ends). The cookie is the account's,
/// so it permits what the drop credentials permit and nothing more: create-only writes to the drop database, within
/// `--max-size`, until the session ends.
///
/// Only a page of this server may post it (`GalleryGuard.requireSameOrigin`: a page elsewhere cannot sign a visitor's
/// browser into a drop it controls), and only as JSON (which a plain HTML form cannot send).
package struct SignInRoutes: RouteCollection {
    let tokens: SignInTokens
    let database: String
    let accounts: TemporaryAccounts
    let hosts: HostPolicy

    package init(tokens: SignInTokens, database: String, services: AppServices) {
        self.tokens = tokens
        self.database = database
        self.accounts = services.dropAccounts
        self.hosts = services.hosts
    }

    /// The longest body read: `{"token":"<32 hex digits>"}` with room for whitespace.
    static let bodyLimit = 1024

    package var routes: [Route] {
        [
            Route([.POST], "/_photos/api/signin", .anyone, drop: .open, body: .small) { c in
                try GalleryGuard.requireSameOrigin(c.request.head, servedBy: hosts)
                let type = c.request.head.headers["Content-Type"]?.split(separator: ";").first
                guard let type, type.trimmingCharacters(in: .whitespaces).lowercased() == "application/json" else {
                    throw CouchError.badContentType("Content-Type must be 'application/json'")
                }
                var body: [UInt8] = []
                try c.request.streamBody(limit: Self.bodyLimit, tooLarge: "A sign-in body is a token, nothing more") {
                    body.append(contentsOf: $0)
                }
                guard case .object(let object) = (try? JSON.parse(body)) ?? .null else { throw CouchError.invalidJSON }
                guard let token = object["token"]?.stringValue else {
                    throw CouchError.badRequest("Send the token of the QR code as {\"token\":\"…\"}")
                }
                let outcome = tokens.redeem(Array(token.utf8), secure: c.request.head.isSecure)
                switch outcome {
                case .accepted(let user, _):
                    guard let cookie = accounts.signInCookie(for: user, secure: c.request.head.isSecure) else {
                        throw CouchError.unauthorized("The receiving session is over")
                    }
                    var headers = HTTPHeaders()
                    headers.add("Set-Cookie", cookie)
                    headers.add("Cache-Control", "no-store")
                    let facts = tokens.facts
                    var reply = JSONObject([
                        ("ok", .bool(true)), ("name", .string(user)), ("db", .string(database)),
                        ("expires", .string(facts.expires)),
                    ])
                    if let fingerprint = facts.fingerprint { reply["fingerprint_sha256"] = .string(fingerprint) }
                    return .json(.ok, .object(reply), headers: headers)
                case .used:
                    throw CouchError.unauthorized(
                        "This QR code has signed in a browser already: scan the new one on the receiving screen")
                case .wrong:
                    throw CouchError.unauthorized("This sign-in link is not the receiving screen's")
                case .spent, .closing:
                    throw CouchError.forbidden(
                        "Too many wrong sign-in links: sign in with the name and password on the receiving screen")
                case .malformed:
                    throw CouchError.badRequest("A sign-in token is 32 hex digits")
                case .closed:
                    throw CouchError.unauthorized("The receiving session is over")
                case .insecure:
                    throw CouchError.forbidden("The sign-in link works only over https://")
                }
            }
        ]
    }
}
