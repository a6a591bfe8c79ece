import CouchWire
import Foundation

/// The defences of the pages couchlite serves itself (the gallery under `/_photos`, the console under `/_utils`): a
/// strict Content-Security-Policy on their files, and a same-origin check on the requests that change something.
package enum PageGuard {
    /// The headers of one of the pages' files: `policy` is the page's Content-Security-Policy (no inline script or
    /// style, nothing from elsewhere, so data rendered into the page can never become code even if an escape were
    /// missed), and the page may not be framed, sniffed or leak its address.
    package static func headers(contentType: String, policy: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.set("Content-Type", contentType)
        headers.set("Content-Security-Policy", policy)
        headers.set("X-Content-Type-Options", "nosniff")
        headers.set("X-Frame-Options", "DENY")
        headers.set("Referrer-Policy", "same-origin")
        headers.set("Cache-Control", "no-cache")
        return headers
    }

    /// Refuses a state-changing request that a page of another origin could have sent with the
    /// user's cookie. The session cookie is `SameSite=Lax`, which stops other *sites*, but a page on
    /// another port of the same host is the same site: the browser's `Origin` (sent on every
    /// cross-origin and every non-GET request) must name this server, and `Sec-Fetch-Site`, when
    /// present, must say `same-origin`. Clients that are not browsers send neither and must then
    /// authenticate with a header (Basic), which no other page can make a browser send.
    ///
    /// The `Origin` must name an address this server serves (`HostPolicy.servesOrigin`), not merely match the request's
    /// `Host`: a page on `http://evil.example/` whose name its owner re-points at this server (DNS rebinding)
    /// sends `Origin: http://evil.example` with `Host: evil.example`, which match each other.
    package static func requireSameOrigin(_ head: HTTPRequestHead, servedBy hosts: HostPolicy) throws(CouchError) {
        if let origin = try pageOrigin(head) {
            guard hosts.servesOrigin(origin, host: head.headers["Host"]) else { throw notServed }
            return
        }
        guard head.headers["Authorization"] != nil else {
            throw .forbidden("A request that changes data needs an Origin header or Basic credentials.")
        }
    }

    /// The check of every write a session cookie makes on a CouchDB row (the console's, and any other page's): a page
    /// of another origin can make the browser send the cookie, so the request must come from a page this server
    /// serves, or from an origin CORS lets in with credentials (`[cors] credentials`, whose pages are preflighted).
    /// A request that also carries `Authorization` is a client's that sends its credentials itself (no other page can
    /// make a browser add them), as for `requireSameOrigin`. Without an `Origin` (browsers send one on every write they
    /// make for a page) a `POST` body must be JSON or another type no form can send: a form's
    /// (`application/x-www-form-urlencoded`, `multipart/form-data`), `text/plain` or an untyped body is what a page
    /// can post without a preflight.
    static func requireCookieWrite(
        _ head: HTTPRequestHead, servedBy hosts: HostPolicy, cors: CORSPolicy
    ) throws(CouchError) {
        if head.headers["Authorization"] != nil { return }
        if let origin = head.headers["Origin"], cors.acceptedOrigin(head.headers) != nil, cors.allowsCredentials(origin)
        {
            return
        }
        if let origin = try pageOrigin(head) {
            guard hosts.servesOrigin(origin, host: head.headers["Host"]) else { throw notServed }
            return
        }
        guard head.method == "POST", hasBody(head) else { return }
        guard let type = mediaType(head.headers["Content-Type"]), !simpleTypes.contains(type) else {
            throw .forbidden(
                "A request that changes data with a session cookie needs an Origin header or a JSON body.")
        }
    }

    /// The body types a page of another origin may send without a CORS preflight (the Fetch standard's
    /// CORS-safelisted `Content-Type`s).
    static let simpleTypes: Set<String> = ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"]

    private static func hasBody(_ head: HTTPRequestHead) -> Bool {
        if head.headers["Transfer-Encoding"] != nil { return true }
        guard let length = head.headers["Content-Length"] else { return false }
        return length.trimmingCharacters(in: .whitespaces) != "0"
    }

    /// The request's `Origin`, after `Sec-Fetch-Site` (when present) said the page is this server's.
    private static func pageOrigin(_ head: HTTPRequestHead) throws(CouchError) -> String? {
        if let site = head.headers["Sec-Fetch-Site"], site != "same-origin", site != "none" {
            throw .forbidden("Cross-site request refused.")
        }
        return head.headers["Origin"]
    }

    private static let notServed = CouchError.forbidden(
        "Cross-site request refused: the Origin is not an address this server serves (name it with --allowed-hosts).")

    /// The media type of a `Content-Type`, lowercased, without its parameters (`; charset=utf-8`).
    static func mediaType(_ contentType: String?) -> String? {
        guard let contentType else { return nil }
        let type = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        let trimmed = type.trimmingCharacters(in: .whitespaces).lowercased()
        return trimmed.isEmpty ? nil : trimmed
    }
}
