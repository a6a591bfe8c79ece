import CouchWire

/// Who a request speaks for, as CouchDB's `#user_ctx`: `name` is nil for an anonymous request.
/// Names and roles are `ExactName`s: every access decision compares them by bytes.
package struct UserContext: Sendable, Equatable {
    package var name: ExactName?
    var roles: [ExactName]
    /// The handler that authenticated the request (`"cookie"` or `"default"` for Basic), as
    /// `GET /_session` reports it in `info.authenticated`; nil when anonymous.
    var handler: String?
    /// The one database this user may use, for a temporary account (`TemporaryAccounts`); nil otherwise.
    package var scope: String? = nil
    /// What a temporary account has written (`DropLedger`); nil for everyone else.
    package var drop: DropLedger? = nil

    static let anonymous = UserContext(name: nil, roles: [], handler: nil)

    /// The role every server admin carries.
    static let adminRole: ExactName = "_admin"

    package var isServerAdmin: Bool { roles.contains(UserContext.adminRole) }

    /// `{"name":…,"roles":[…]}`, the `userCtx` of `GET /_session`.
    package var json: JSON {
        .object(
            JSONObject([
                ("name", name.map { JSON.string($0.text) } ?? .null), ("roles", .array(roles.map { .string($0.text) })),
            ]))
    }
}

extension UserContext {
    /// `{"db","name","roles"}`: the user as design functions see it (`userCtx`).
    func designJSON(database: String) -> JSON {
        var userCtx = JSONObject()
        userCtx["db"] = .string(database)
        userCtx["name"] = name.map { .string($0.text) } ?? .null
        userCtx["roles"] = .array(roles.map { .string($0.text) })
        return .object(userCtx)
    }
}

extension App {
    /// CouchDB's users database, where `_users` documents hold the accounts.
    static let usersDatabase = "_users"
    /// The id prefix of a user document: `org.couchdb.user:NAME`.
    static let userDocumentPrefix = "org.couchdb.user:"
}
