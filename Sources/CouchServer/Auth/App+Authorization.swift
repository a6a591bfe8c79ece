import CouchWire
import Foundation
import RevTree

/// Who may use which route: chttpd_auth_request.erl's table, then the database's `_security`
/// (members read and write, db admins also change `_security` and design documents).
extension App {
    /// Runs before routing: answers CORS preflights, authenticates, and checks the route.
    /// - Returns: false when the request has been answered already (a preflight).
    /// - Throws: 400/401/403/404 as CouchDB would answer them.
    func admit(_ request: Request, _ reply: Reply, trusted: UserContext? = nil) throws -> Bool {
        if let trusted {
            UserContext.current = trusted
            try authorize(request, trusted)
            return true
        }
        if let preflight = access.cors.preflight(request.head) {
            try reply.bytes(204, [], headers: preflight)
            return false
        }
        let outcome = try access.authenticator.authenticate(request.head.headers, client: request.head.remoteAddress)
        UserContext.current = outcome.user
        if let cookie = outcome.refreshedCookie {
            reply.extraHeaders.add("Set-Cookie", SessionCookie.header(cookie, now: Authenticator.now))
        }
        try authorize(request, outcome.user)
        try limitBody(request, outcome.user)
        return true
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

    /// The route table of chttpd_auth_request.erl plus the member check of couch_db:open.
    func authorize(_ request: Request, _ user: UserContext) throws {
        let segments = request.segments
        guard let first = segments.first else { return }
        let method = request.method
        let second = segments.count > 1 ? segments[1] : nil
        if let scope = user.scope {
            // A temporary account: its own allow-list, then the checks below as for any member.
            try authorizeScoped(request, scope: scope)
            if first == "_session" { return }
        }
        if first == "_all_dbs" || first == "_dbs_info" { return try requireServerAdmin(user) }
        if first == App.usersDatabase || first == "_replicator" {
            if segments.count == 1 && (method == "PUT" || method == "DELETE") { return try requireServerAdmin(user) }
            if second == "_all_docs" || second == "_changes" { return try requireServerAdmin(user) }
        } else if first.hasBytePrefix("_") && !App.systemDatabases.contains(first) {
            switch first {
            // The gallery checks each database it touches itself (Gallery/App+Gallery.swift).
            case "_up", "_uuids", "_session", "_photos": return
            // chttpd_auth_request: the metrics endpoints name the read-only metrics user CouchDB also has.
            case "_node" where segments.count >= 3 && ["_stats", "_system", "_prometheus"].contains(segments[2]):
                guard user.isServerAdmin else {
                    throw CouchError.unauthorized("You are not a server admin or read-only metrics user")
                }
                return
            default: return try requireServerAdmin(user)
            }
        } else if segments.count == 1 && (method == "PUT" || method == "DELETE") {
            return try requireServerAdmin(user)
        } else if second == "_purge" || second == "_purged_infos_limit" || second == "_sync_shards" {
            return try requireServerAdmin(user)
        }
        // Every other route needs the database: a missing one is 404 whoever asks.
        _ = try openDatabase(first)
        let security = access.security.security(of: first)
        if second == "_compact" || second == "_view_cleanup" {
            guard security.isAdmin(user) else { throw CouchError.unauthorized("You are not a server or db admin.") }
            return
        }
        // A temporary account is a member of its one database only through its scope, never by name in `_security`.
        let scopedMember = user.scope.map { Array($0.utf8) == Array(first.utf8) } ?? false
        guard scopedMember || security.isMember(user) else { throw App.securityError(user) }
        if security.isAdmin(user) { return }
        if first == App.usersDatabase { return try authorizeUsersDatabase(request, user) }
        if isDesignWrite(request) || (second == "_revs_limit" && method == "PUT") {
            throw App.securityError(user, "You are not a db or server admin.")
        }
    }

    /// Writes to `_design/…` (the document or its attachments).
    private func isDesignWrite(_ request: Request) -> Bool {
        guard ["PUT", "POST", "DELETE", "COPY"].contains(request.method), request.segments.count >= 2 else {
            return false
        }
        let second = request.segments[1]
        return (second == "_design" && request.segments.count >= 3) || second.hasBytePrefix("_design/")
    }

    /// `_users` for someone who is not its admin: only their own document (couch_users_db.erl:
    /// others' documents are 404, design documents are admins' business).
    private func authorizeUsersDatabase(_ request: Request, _ user: UserContext) throws {
        let segments = request.segments
        let method = request.method
        if segments.count == 1 { return }
        let second = segments[1]
        if second == "_bulk_docs" { return }  // each document is checked as it is written
        if segments.count == 2, !second.hasBytePrefix("_") {
            if method == "PUT" || method == "DELETE" { return }  // checked as it is written
            guard method == "GET" || method == "HEAD" else { throw CouchError.methodNotAllowed("DELETE,GET,HEAD,PUT") }
            guard let name = user.name, second.utf8Equals(App.userDocumentPrefix + name.text) else {
                throw CouchError.notFound("missing")
            }
            return
        }
        if (second == "_design" || second.hasBytePrefix("_design/")) && (method == "GET" || method == "HEAD") {
            throw CouchError.forbidden("Only administrators can view design docs in the users database.")
        }
        throw App.securityError(user, "You are not a db or server admin.")
    }

    /// couch_httpd's `verify_is_server_admin`: 401 for anyone, logged in or not.
    func requireServerAdmin(_ user: UserContext) throws(CouchError) {
        guard user.isServerAdmin else { throw .unauthorized("You are not a server admin.") }
    }

    /// couch_db's `throw_security_error`: 401 when nobody is logged in, else 403.
    static func securityError(_ user: UserContext, _ reason: String? = nil) -> CouchError {
        if user.name == nil {
            return .unauthorized(reason ?? "You are not authorized to access this db.")
        }
        return .forbidden(reason ?? "You are not allowed to access this db.")
    }

    /// Whether the current request's user may administer `database` (server or db admin).
    func isDatabaseAdmin(_ database: String, _ user: UserContext = UserContext.current) -> Bool {
        access.security.security(of: database).isAdmin(user)
    }

    /// For document writers: throws unless the current user may write this design document.
    /// Plain members may write ordinary documents only.
    func requireDesignWriteAccess(_ database: Database, docID: String) throws(CouchError) {
        guard docID.hasBytePrefix("_design/") else { return }
        let user = UserContext.current
        guard isDatabaseAdmin(database.name, user) else {
            throw App.securityError(user, "You are not a db or server admin.")
        }
    }

    // MARK: _security

    /// `GET/PUT /db/_security`.
    func securityObject(_ database: Database, _ request: Request, _ reply: Reply) throws {
        switch request.method {
        case "GET", "HEAD":
            try reply.json(200, .object(access.security.security(of: database.name).json))
        case "PUT":
            // CouchDB's `[couchdb] users_db_security_editable`, off by default.
            if database.name == App.usersDatabase && !options.usersDBSecurityEditable {
                throw CouchError.forbidden("You can't edit the security object of the user database.")
            }
            let user = UserContext.current
            guard isDatabaseAdmin(database.name, user) else {
                throw App.securityError(user, "You are not a db or server admin.")
            }
            if let type = request.contentType, type != "application/json" {
                throw CouchError.badContentType("Content-Type must be application/json")
            }
            let object = try SecurityObject(request.jsonBody(limit: Limits.smallRequestBytes))
            try access.security.setSecurity(object, of: database.name)
            try reply.json(200, ["ok": true])
        default:
            throw CouchError.methodNotAllowed("GET,HEAD,PUT")
        }
    }
}
