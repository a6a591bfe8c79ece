import CouchWire
import Foundation

/// `GET/POST/DELETE /_session`: cookie login and logout (couch_httpd_auth's
/// `handle_session_req`). The CouchDB replicator logs in here with a form before replicating
/// (protocol.md §1a row 0), so a 200 always sets `AuthSession`.
extension App {
    func sessionEndpoint(_ request: Request, _ reply: Reply) throws {
        switch request.method {
        case "POST": try logIn(request, reply)
        case "GET", "HEAD":
            let user = request.user
            if user.name == nil, request.query["basic"] == "true" { throw CouchError.unauthorized("Please login.") }
            var info = JSONObject([("authentication_handlers", ["cookie", "default"])])
            if let handler = user.handler { info["authenticated"] = .string(handler) }
            info["authentication_db"] = .string(App.usersDatabase)
            try reply.json(200, ["ok": true, "userCtx": user.json, "info": .object(info)])
        case "DELETE":
            var headers = HTTPHeaders()
            headers.add("Set-Cookie", SessionCookie.header("", now: Authenticator.now, secure: request.head.isSecure))
            let status = try addRedirect(request.query["next"], request, &headers)
            try reply.json(status, ["ok": true], headers: headers)
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,POST,DELETE")
        }
    }

    private func logIn(_ request: Request, _ reply: Reply) throws {
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
        let authenticator = access.authenticator
        var headers = HTTPHeaders()
        guard name.utf8.count <= AuthLimits.credentialBytes, password.count <= AuthLimits.credentialBytes,
            let account = authenticator.login(
                name: ExactName(name), password: password, client: request.head.remoteAddress)
        else {
            headers.add("Set-Cookie", SessionCookie.header("", now: Authenticator.now, secure: request.head.isSecure))
            let redirected = try addRedirect(request.query["fail"], request, &headers)
            let status = redirected == 302 ? 302 : 401
            let error = CouchError.unauthorized("Name or password is incorrect.")
            return try reply.json(status, error.json, headers: headers)
        }
        headers.add(
            "Set-Cookie",
            SessionCookie.header(
                authenticator.newCookie(for: account), now: Authenticator.now, secure: request.head.isSecure))
        let status = try addRedirect(request.query["next"], request, &headers)
        try reply.json(
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
    private func addRedirect(_ target: String?, _ request: Request, _ headers: inout HTTPHeaders) throws -> Int {
        guard let target else { return 200 }
        guard target.hasPrefix("/"), !target.hasPrefix("//"), !target.contains("\\"),
            target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F })
        else {
            throw CouchError.badRequest("Redirect target must be a path on this server")
        }
        let secure = request.head.isSecure
        let fallback = "\(options.bind):\((secure ? options.tlsPort : options.port) ?? options.tlsPort)"
        var host = request.head.headers["Host"] ?? fallback
        if !host.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "@") }) {
            host = fallback
        }
        headers.add("Location", "\(secure ? "https" : "http")://\(host)\(target)")
        return 302
    }
}
