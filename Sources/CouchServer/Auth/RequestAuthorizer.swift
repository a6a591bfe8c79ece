import CouchStore
import CouchWire

/// Decides from a request's route row whether its user may make it, and how much they may send, before any of the
/// body is read. The rules are chttpd_auth_request.erl's, then the database's `_security` (members read and write,
/// db admins also change `_security` and design documents), then `_users`' own (couch_users_db.erl), then what
/// `couchlite receive`'s one-time credentials may do (`DropScope`).
package struct RequestAuthorizer: Sendable {
    package let store: Store
    package let security: SecurityStore

    /// The `_local` documents couchlite itself keeps in a database (the receive position); the drop credentials may
    /// not read or write them.
    package static let reservedLocalPrefix = "_local/couchlite-"

    /// - Throws: 401/403/404 as CouchDB would answer, 403 for the drop credentials outside their scope, 412 for
    ///   their `PUT` of their own database.
    func authorize(
        _ access: Access, drop: DropScope, _ parameters: RouteParameters, _ user: UserContext
    ) throws(CouchError) {
        if let scope = user.scope { try authorizeDrop(drop, parameters, scope: scope) }
        switch access {
        case .anyone:
            return
        case .serverAdmin:
            return try RequestAuthorizer.requireServerAdmin(user)
        case .metricsReader:
            guard user.isServerAdmin else {
                throw .unauthorized("You are not a server admin or read-only metrics user")
            }
            return
        default:
            break
        }
        guard let name = parameters.database else { throw .notFound("missing") }
        if access == .memberListing && (name.utf8Equals(App.usersDatabase) || name.utf8Equals("_replicator")) {
            return try RequestAuthorizer.requireServerAdmin(user)
        }
        // Every database route needs the database: a missing one is 404 whoever asks.
        do {
            _ = try store.open(name)
        } catch {
            throw CouchError(error)
        }
        let security = security.security(of: name)
        if access == .maintenanceAdmin {
            guard security.isAdmin(user) else { throw .unauthorized("You are not a server or db admin.") }
            return
        }
        // The drop credentials are a member of their one database through their scope, never by name in `_security`.
        let scopedMember = user.scope.map { Array($0.utf8) == Array(name.utf8) } ?? false
        guard scopedMember || security.isMember(user) else { throw RequestAuthorizer.securityError(user) }
        if security.isAdmin(user) { return }
        if name.utf8Equals(App.usersDatabase) { return try authorizeUsersMember(access, parameters, user) }
        if access == .databaseAdmin { throw RequestAuthorizer.securityError(user, "You are not a db or server admin.") }
    }

    /// `_users` for someone who is not its admin (couch_users_db.erl): its info, writes that are checked as they are
    /// written, their own document; others' documents are 404, design documents 403, everything else refused.
    private func authorizeUsersMember(
        _ access: Access, _ parameters: RouteParameters, _ user: UserContext
    ) throws(CouchError) {
        switch access {
        case .usersMember:
            return
        case .usersOwnDocument:
            guard let name = user.name, let docID = parameters["doc"],
                docID.utf8Equals(App.userDocumentPrefix + name.text)
            else { throw .notFound("missing") }
        case .usersDesignRead:
            throw .forbidden("Only administrators can view design docs in the users database.")
        default:
            throw RequestAuthorizer.securityError(user, "You are not a db or server admin.")
        }
    }

    /// What the drop credentials, confined to the database `scope`, may do on a route.
    private func authorizeDrop(_ drop: DropScope, _ parameters: RouteParameters, scope: String) throws(CouchError) {
        if drop == .open { return }
        guard drop != .closed, let database = parameters.database, Array(database.utf8) == Array(scope.utf8) else {
            throw RequestAuthorizer.scopeError(scope)
        }
        switch drop {
        case .exists: throw .fileExists
        case .checkpoint: try RequestAuthorizer.requireUnreservedLocal("_local/" + (parameters["local"] ?? ""), scope)
        default: return
        }
    }

    /// The most bytes `user` may send on a route with `limit`: anonymous requests, and requests to `_users` from
    /// someone who is not its admin (who may write no more than their own user document), have no business sending
    /// megabytes; an anonymous 64 MiB `POST /_users/_bulk_docs` is answered 413 at once instead of being read.
    func bodyCap(_ limit: BodyLimit, _ parameters: RouteParameters, _ user: UserContext) -> (bytes: Int, byUser: Bool)?
    {
        var userCap: Int?
        if !user.isServerAdmin {
            if user.name == nil {
                userCap = Limits.anonymousRequestBytes
            } else if parameters.database?.utf8Equals(App.usersDatabase) == true,
                !security.security(of: App.usersDatabase).isAdmin(user)
            {
                userCap = Limits.anonymousRequestBytes
            }
        }
        switch (userCap, limit.bytes) {
        case (let user?, let route?): return user < route ? (user, true) : (route, false)
        case (let user?, nil): return (user, true)
        case (nil, let route?): return (route, false)
        case (nil, nil): return nil
        }
    }

    /// couch_httpd's `verify_is_server_admin`: 401 for anyone, logged in or not.
    static func requireServerAdmin(_ user: UserContext) throws(CouchError) {
        guard user.isServerAdmin else { throw .unauthorized("You are not a server admin.") }
    }

    /// couch_db's `throw_security_error`: 401 when nobody is logged in, else 403.
    package static func securityError(_ user: UserContext, _ reason: String? = nil) -> CouchError {
        if user.name == nil {
            return .unauthorized(reason ?? "You are not authorized to access this db.")
        }
        return .forbidden(reason ?? "You are not allowed to access this db.")
    }

    /// For `_local` writers (also inside `_bulk_docs`): couchlite's own `_local` documents are off limits to the drop
    /// credentials. By bytes: `hasPrefix` compares characters, and `_local/couchlite-` followed by a combining mark
    /// is not a character prefix although every byte of it is.
    static func requireUnreservedLocal(_ docID: String, _ scope: String?) throws(CouchError) {
        guard scope != nil, docID.hasBytePrefix(reservedLocalPrefix) else { return }
        throw .forbidden("This document is reserved for couchlite.")
    }

    package static func scopeError(_ scope: String) -> CouchError {
        .forbidden("These one-time credentials may only push to the database \(scope).")
    }
}
