import CouchWire

/// Cross-origin rules, as CouchDB's `[cors]` section with `[httpd] enable_cors = true`
/// (chttpd_cors.erl): preflights are answered before authentication, and matching origins are
/// echoed back (never `*`, which browsers refuse together with credentials, as PouchDB sends).
///
/// Credentials (`Access-Control-Allow-Credentials: true`, which lets a page on that origin act with
/// its visitor's cookie or Basic login) are off unless asked for, as CouchDB's `[cors] credentials`
/// default. Asked for with `true`, they go to the origins listed by name only; an origin accepted
/// merely because the list holds `*` gets them only when the operator says `any-origin` (CouchDB's
/// `credentials = true` with `origins = *` would let every web page on the LAN in).
package struct CORSPolicy: Sendable {
    /// When CORS answers carry `Access-Control-Allow-Credentials: true`.
    package enum Credentials: String, Sendable {
        /// Never (the default).
        case off = "false"
        /// For origins listed by name.
        case listed = "true"
        /// For every accepted origin, `*` included: only on the operator's explicit word.
        case anyOrigin = "any-origin"
    }

    /// Accepted origins, exactly as `Origin` carries them (`*` accepts any); empty turns CORS off.
    var origins: [String] = []
    var credentials = Credentials.off

    /// `Access-Control-Max-Age` of preflights, in seconds (CouchDB's default).
    static let maxAgeSeconds = 600
    /// Request headers a preflight may ask for (CouchDB's `SUPPORTED_HEADERS`).
    static let supportedHeaders: Set<String> = [
        "accept", "accept-language", "authorization", "content-length", "content-range", "content-type",
        "destination", "expires", "if-match", "last-modified", "origin", "pragma", "x-couch-full-commit",
        "x-couch-id", "x-couch-persist", "x-couchdb-www-authenticate", "x-http-method-override",
        "x-requested-with", "x-couchdb-vhost-path",
    ]
    /// Methods a preflight may ask for, in the order CouchDB lists them.
    static let supportedMethods = ["CONNECT", "COPY", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "TRACE"]
    /// Response headers exposed besides the simple ones (CouchDB's `COUCH_HEADERS`).
    static let exposedCouchHeaders = [
        "accept-ranges", "etag", "server", "x-couch-request-id", "x-couch-update-newrev", "x-couchdb-body-time",
    ]

    var isEnabled: Bool { !origins.isEmpty }

    /// The origin to answer, when CORS is on, the request names one we accept, and it is safe to
    /// echo into a header (no control characters).
    func acceptedOrigin(_ headers: HTTPHeaders) -> String? {
        guard isEnabled, let origin = headers["Origin"], !origin.isEmpty,
            origin.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F })
        else { return nil }
        return origins.contains("*") || isListed(origin) ? origin : nil
    }

    /// The headers of a 204 preflight answer, or nil when the request is not a preflight we
    /// accept (it is then routed like any other request).
    func preflight(_ head: HTTPRequestHead) -> HTTPHeaders? {
        guard head.method == "OPTIONS", let origin = acceptedOrigin(head.headers),
            let method = head.headers["Access-Control-Request-Method"], CORSPolicy.supportedMethods.contains(method)
        else { return nil }
        let requested = head.headers["Access-Control-Request-Headers"] ?? ""
        let names = requested.split(separator: ",").map { $0.trimmingCharacters(in: " \t").lowercased() }.filter {
            !$0.isEmpty
        }
        guard names.allSatisfy({ CORSPolicy.supportedHeaders.contains($0) }),
            requested.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F })
        else { return nil }
        var headers = HTTPHeaders()
        headers.add("Access-Control-Allow-Origin", origin)
        headers.add("Access-Control-Max-Age", String(CORSPolicy.maxAgeSeconds))
        headers.add("Access-Control-Allow-Methods", CORSPolicy.supportedMethods.joined(separator: ", "))
        if allowsCredentials(origin) { headers.add("Access-Control-Allow-Credentials", "true") }
        headers.add("Access-Control-Allow-Headers", requested)
        headers.add("Vary", "Origin")
        return headers
    }

    /// Headers added to an ordinary response for an accepted origin.
    func responseHeaders(_ headers: HTTPHeaders) -> HTTPHeaders {
        guard let origin = acceptedOrigin(headers) else { return HTTPHeaders() }
        var out = HTTPHeaders()
        out.add("Access-Control-Allow-Origin", origin)
        if allowsCredentials(origin) { out.add("Access-Control-Allow-Credentials", "true") }
        // Our responses carry Content-Type (not a "simple" one for JSON) and Cache-Control.
        out.add(
            "Access-Control-Expose-Headers",
            (["content-type", "cache-control"] + CORSPolicy.exposedCouchHeaders).joined(separator: ", "))
        out.add("Vary", "Origin")
        return out
    }

    /// Whether the origin is listed by name, byte for byte.
    private func isListed(_ origin: String) -> Bool {
        origins.contains { $0.utf8Equals(origin) }
    }

    /// Credentials for an accepted origin (never for the literal origin `*`, as CouchDB).
    func allowsCredentials(_ origin: String) -> Bool {
        guard origin != "*" else { return false }
        switch credentials {
        case .off: return false
        case .listed: return isListed(origin)
        case .anyOrigin: return true
        }
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return String(s)
    }
}
