import CouchStore
import CouchWire

extension ChangesHandlers {
    /// The `req` object a filter function gets (`DesignRequestObject`), with the body of a POST as JSON text.
    func filterRequest(_ database: Database, _ request: Request, body: JSONObject?) throws -> JSON {
        try DesignRequestObject(security: security, compactions: compactions).json(
            database, request, id: nil, body: body.map { .raw(JSON.object($0).serialized()) } ?? .none)
    }
}
