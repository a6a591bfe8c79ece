import CouchServer
import CouchWire

/// The gallery's defences: a strict Content-Security-Policy on its pages and a same-origin check on
/// every request that changes something.
enum GalleryGuard {
    /// No inline script or style, nothing from elsewhere: data rendered into the page can never
    /// become code, even if an escape were missed.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; media-src 'self'; "
        + "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    static func pageHeaders(contentType: String) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.set("Content-Type", contentType)
        headers.set("Content-Security-Policy", contentSecurityPolicy)
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
    static func requireSameOrigin(_ head: HTTPRequestHead, servedBy hosts: HostPolicy) throws(CouchError) {
        if let site = head.headers["Sec-Fetch-Site"], site != "same-origin", site != "none" {
            throw .forbidden("Cross-site request refused.")
        }
        if let origin = head.headers["Origin"] {
            guard hosts.servesOrigin(origin, host: head.headers["Host"]) else {
                throw .forbidden(
                    "Cross-site request refused: the Origin is not an address this server serves "
                        + "(name it with --allowed-hosts).")
            }
            return
        }
        guard head.headers["Authorization"] != nil else {
            throw .forbidden("A request that changes data needs an Origin header or Basic credentials.")
        }
    }
}
