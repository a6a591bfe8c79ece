import CouchStore
import CouchWire
import Foundation

/// Authentication before routing, CORS and error headers (who may use which route is the route table's, decided by
/// `RequestAuthorizer`).
extension App {
    /// Runs before routing: answers CORS preflights and authenticates.
    /// - Returns: The user the request speaks for; nil when the request has been answered already (a preflight).
    /// - Throws: 401 for bad credentials, as CouchDB answers them.
    func authenticate(_ request: Request, _ reply: Reply, trusted: UserContext? = nil) throws -> UserContext? {
        if let trusted { return trusted }
        if let preflight = access.cors.preflight(request.head) {
            try reply.send(.bytes(.noContent, [], headers: preflight))
            return nil
        }
        let outcome = try access.authenticator.authenticate(request.head.headers, client: request.head.remoteAddress)
        // `receive` with TLS on: its one-time credentials work only over HTTPS, never on the plain port.
        if let drop = outcome.user.drop, drop.httpsOnly, !request.head.isSecure {
            throw CouchError.forbidden("These one-time credentials work only over HTTPS.")
        }
        if let cookie = outcome.refreshedCookie {
            reply.extraHeaders.add(
                "Set-Cookie", SessionCookie.header(cookie, now: Authenticator.now, secure: request.head.isSecure))
        }
        return outcome.user
    }

    /// CORS headers for whatever this request is answered with, errors included.
    func applyCORS(_ head: HTTPRequestHead, _ reply: Reply) {
        for (name, value) in access.cors.responseHeaders(head.headers) { reply.extraHeaders.add(name, value) }
    }

    /// Headers CouchDB adds to an error: a 401 carries `WWW-Authenticate` only when the client
    /// asked for one with `X-CouchDB-WWW-Authenticate` (its value, echoed), since couchlite has no
    /// `[httpd] WWW-Authenticate` setting and no `/_utils` login page to redirect browsers to.
    func errorHeaders(_ error: CouchError, _ head: HTTPRequestHead) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if error.status == 401, let wanted = head.headers["X-CouchDB-WWW-Authenticate"],
            !wanted.isEmpty, wanted.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F })
        {
            headers.add("WWW-Authenticate", wanted)
        }
        return headers
    }
}
