import CouchWire
import RevTree

/// `{"db","name","roles"}` of a request's user, as design functions see it (a filter's `req.userCtx`,
/// `validate_doc_update`'s `userCtx`).
func userContextJSON(_ database: Database, _ user: UserContext) -> JSON {
    var userCtx = JSONObject()
    userCtx["db"] = .string(database.name)
    userCtx["name"] = user.name.map { .string($0.text) } ?? .null
    userCtx["roles"] = .array(user.roles.map { .string($0.text) })
    return .object(userCtx)
}
