import CouchWire
import Foundation

/// `GET/POST/DELETE /_session`: cookie login and logout (couch_httpd_auth's
/// `handle_session_req`). The CouchDB replicator logs in here with a form before replicating
/// (protocol.md §1a row 0), so a 200 always sets `AuthSession`.
struct SessionHandlers: Sendable {
    /// Checks the password (through its login throttle) and signs the cookie.
    package let authenticator: Authenticator
    /// The `Host` a `next`/`fail` redirect names when the request's own is missing or unusable: the address
    /// listened on, with the port of plain HTTP and of TLS.
    let fallbackHost: String
    let fallbackSecureHost: String

    init(authenticator: Authenticator, options: Options) {
        self.authenticator = authenticator
        fallbackHost = "\(options.bind):\(options.port ?? options.tlsPort)"
        fallbackSecureHost = "\(options.bind):\(options.tlsPort)"
    }

    /// `GET /_session`: who the request speaks for.
    func session(_ c: RequestContext) throws -> Response {
        let user = c.user
        if user.name == nil, c.query["basic"] == "true" { throw CouchError.unauthorized("Please login.") }
        var info = JSONObject([("authentication_handlers", ["cookie", "default"])])
        if let handler = user.handler { info["authenticated"] = .string(handler) }
        info["authentication_db"] = .string(App.usersDatabase)
        return .json(.ok, ["ok": true, "userCtx": user.json, "info": .object(info)])
    }

    /// `DELETE /_session`: clears the cookie.
    func logOut(_ c: RequestContext) throws -> Response {
        let request = c.request
        var headers = HTTPHeaders()
        headers.add("Set-Cookie", SessionCookie.header("", now: Authenticator.now, secure: request.head.isSecure))
        let status = try addRedirect(request.query["next"], request, &headers)
        return .json(status, ["ok": true], headers: headers)
    }

    /// `POST /_session`: checks a name and password and sets the cookie.
    func logIn(_ c: RequestContext) throws -> Response {
        let request = c.request
        let form = try loginForm(request)
        let couchName = form["name"]
        let altName = form["username"]
        let name: String
        switch (couchName, altName) {
        case (nil, nil): throw CouchError.badRequest("request body must contain a username")
        case (let n?, nil), (nil, let n?): name = n
        case (let a?, let b?):
            guard a.utf8Equals(b) else { throw CouchError.badRequest("request body contains different usernames") }
            name = a
        }
        let password = Array((form["password"] ?? "").utf8)
        var headers = HTTPHeaders()
        guard name.utf8.count <= AuthLimits.credentialBytes, password.count <= AuthLimits.credentialBytes,
            let account = authenticator.login(
                name: ExactName(name), password: password, client: request.head.remoteAddress)
        else {
            headers.add("Set-Cookie", SessionCookie.header("", now: Authenticator.now, secure: request.head.isSecure))
            let redirected = try addRedirect(request.query["fail"], request, &headers)
            let status: Response.Status = redirected == .found ? .found : .unauthorized
            let error = CouchError.unauthorized("Name or password is incorrect.")
            return .json(status, error.json, headers: headers)
        }
        headers.add("Set-Cookie", authenticator.sessionHeader(for: account, secure: request.head.isSecure))
        let status = try addRedirect(request.query["next"], request, &headers)
        return .json(
            status,
            ["ok": true, "name": .string(account.name.text), "roles": .array(account.roles.map { .string($0.text) })],
            headers: headers)
    }

    /// The login fields of a form-encoded or JSON body.
    private func loginForm(_ request: Request) throws -> [String: String] {
        let type = request.contentType ?? ""
        let bytes: [UInt8]
        do {
            bytes = try request.body.readAll(limit: Limits.smallRequestBytes)
        } catch {
            throw CouchError(error)
        }
        var form: [String: String] = [:]
        if type == "application/x-www-form-urlencoded" {
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw CouchError.badRequest("Invalid form body")
            }
            for (name, value) in try QueryParameters(raw: text).pairs where form[name] == nil { form[name] = value }
        } else if type == "application/json" {
            guard case .object(let object) = (try? JSON.parse(bytes)) ?? .null else { throw CouchError.invalidJSON }
            for (name, value) in object {
                guard let string = value.stringValue else { throw CouchError.badRequest("\(name) must be a string") }
                form[name] = string
            }
        } else {
            throw CouchError.badContentType(
                "Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'")
        }
        return form
    }

    /// For `next`/`fail`: a 302 to that path on this server. Only local paths are followed, so the
    /// login page cannot be turned into an open redirect or a header injection.
    private func addRedirect(
        _ target: String?, _ request: Request, _ headers: inout HTTPHeaders
    ) throws -> Response.Status {
        guard let target else { return .ok }
        guard target.hasPrefix("/"), !target.hasPrefix("//"), !target.contains("\\"),
            target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F })
        else {
            throw CouchError.badRequest("Redirect target must be a path on this server")
        }
        let secure = request.head.isSecure
        let fallback = secure ? fallbackSecureHost : fallbackHost
        var host = request.head.headers["Host"] ?? fallback
        if !host.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") }) {
            host = fallback
        }
        headers.add("Location", "\(secure ? "https" : "http")://\(host)\(target)")
        return .found
    }
}

extension SessionHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/_session", .anyone, drop: .open, notAllowedReason: "GET,HEAD,POST,DELETE", session),
            Route([.POST], "/_session", .anyone, drop: .open, body: .small, logIn),
            Route([.DELETE], "/_session", .anyone, drop: .open, logOut),
        ]
    }
}
