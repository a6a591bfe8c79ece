import CouchWire

/// The database console under `/_utils`, where CouchDB serves Fauxton: a page, its style and its script, all of it
/// public as CouchDB's `/_utils` is (chttpd_auth_request lets every user fetch it). Everything the page does goes
/// through CouchDB's own API with the user's `_session` cookie, so its rows decide who may do what, and the cookie's
/// writes are checked against cross-site requests there (`PageGuard.requireCookieWrite`).
struct ConsoleHandlers: Sendable {
    /// `GET /_utils` is answered as CouchDB's `handle_utils_dir_req` answers it: 301 to `/_utils/`; `/_utils/` is the
    /// page.
    func root(_ c: RequestContext) throws -> Response {
        guard c.request.head.path.hasSuffix("/") else {
            var headers = HTTPHeaders()
            headers.set("Location", ConsoleHandlers.absolute("/_utils/", c.request.head))
            return .bytes(Response.Status(301), [], headers: headers)
        }
        return try file("index.html")
    }

    /// `GET /_utils/{asset}`.
    func asset(_ c: RequestContext) throws -> Response {
        try file(c.parameter("asset"))
    }

    private func file(_ name: String) throws(CouchError) -> Response {
        guard let asset = ConsoleAssets.files[name] else { throw .notFound("missing") }
        return .bytes(
            .ok, asset.bytes,
            headers: PageGuard.headers(contentType: asset.contentType, policy: ConsoleAssets.contentSecurityPolicy))
    }

    /// CouchDB's `absolute_uri`: the scheme and `Host` the request came with, then `path` (relative when there is no
    /// usable `Host`).
    static func absolute(_ path: String, _ head: HTTPRequestHead) -> String {
        guard let host = head.headers["Host"], !host.isEmpty,
            host.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") })
        else { return path }
        return (head.isSecure ? "https://" : "http://") + host + path
    }
}

extension ConsoleHandlers: RouteCollection {
    var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/_utils", .anyone, root),
            Route(read, "/_utils/{asset}", .anyone, asset),
            Route(read, "/_utils/{path…}", .anyone) { _ in
                throw CouchError.notFound("missing")
            },
        ]
    }
}
