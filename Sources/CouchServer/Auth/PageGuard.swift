import CouchWire

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

    /// The request's `Origin`, after `Sec-Fetch-Site` (when present) said the page is this server's.
    private static func pageOrigin(_ head: HTTPRequestHead) throws(CouchError) -> String? {
        if let site = head.headers["Sec-Fetch-Site"], site != "same-origin", site != "none" {
            throw .forbidden("Cross-site request refused.")
        }
        return head.headers["Origin"]
    }

    private static let notServed = CouchError.forbidden(
        "Cross-site request refused: the Origin is not an address this server serves (name it with --allowed-hosts).")
}
