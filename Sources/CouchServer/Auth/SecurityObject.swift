import CouchWire

/// A database's `_security` object: who administers it and who may read and write it
/// ([CouchDB docs](https://docs.couchdb.org/en/stable/api/database/security.html)).
///
/// The JSON is kept as sent (CouchDB stores and returns unknown members too); the access rules
/// read `admins` and `members` (or the legacy `readers`) from it.
package struct SecurityObject: Sendable, Equatable {
    private(set) var json: JSONObject

    /// CouchDB 3's `[couchdb] default_security = admin_only`, which new databases get.
    static let adminOnly = SecurityObject(
        validated: JSONObject([
            ("members", ["roles": ["_admin"]]),
            ("admins", ["roles": ["_admin"]]),
        ]))

    /// No restrictions: anyone may read and write (the `_users` database's rules live elsewhere).
    package static let open = SecurityObject(validated: JSONObject())

    private init(validated json: JSONObject) {
        self.json = json
    }

    /// Validates a body sent to `PUT /db/_security` (couch_db's `validate_security_object`).
    /// - Throws: 400 for anything CouchDB refuses.
    init(_ body: JSON) throws(CouchError) {
        guard case .object(let object) = body else { throw .badRequest("bad_request") }
        for key in ["admins", "members"] {
            guard let section = object[key] ?? (key == "members" ? object["readers"] : nil) else { continue }
            guard case .object(let fields) = section else {
                throw .badRequest("admins or members must be a JSON list of strings")
            }
            for list in ["names", "roles"] {
                guard let value = fields[list] else { continue }
                guard let items = value.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
                    throw .badRequest("\(list) must be a JSON list of strings")
                }
            }
        }
        self.json = object
    }

    /// A `names` or `roles` list as byte-compared names (see `ExactName`).
    private func list(_ section: String, _ key: String) -> [ExactName] {
        var value = json[section]
        if section == "members", value == nil { value = json["readers"] }
        return value?.objectValue?[key]?.arrayValue?.compactMap { $0.stringValue.map { ExactName($0) } } ?? []
    }

    /// Server admins, and names or roles listed under `admins`.
    package func isAdmin(_ user: UserContext) -> Bool {
        SecurityObject.matches(user, names: list("admins", "names"), roles: list("admins", "roles"))
    }

    /// Admins, anyone when `members` lists nobody, else the names and roles listed there.
    package func isMember(_ user: UserContext) -> Bool {
        if isAdmin(user) { return true }
        let names = list("members", "names")
        let roles = list("members", "roles")
        if names.isEmpty && roles.isEmpty { return true }
        return SecurityObject.matches(user, names: names, roles: roles)
    }

    /// couch_db's `is_authorized`: `_admin` always matches by role; names only for named users.
    /// Byte comparison, as CouchDB's `lists:member` on binaries: a look-alike name is not listed.
    private static func matches(_ user: UserContext, names: [ExactName], roles: [ExactName]) -> Bool {
        if user.roles.contains(where: { $0 == UserContext.adminRole || roles.contains($0) }) { return true }
        guard let name = user.name else { return false }
        return names.contains(name)
    }
}
