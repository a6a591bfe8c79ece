import CouchStore
import CouchWire

/// Everything a handler is handed for one request: the request (with the user it speaks for), what the route's
/// pattern captured, and the database the route names, opened and leased for the whole request (a feed, an
/// attachment stream, a write), so the bound on open databases never closes a database under its user.
package struct RequestContext {
    package let request: Request
    package let parameters: RouteParameters
    /// The database of a `{db}` route; nil for server routes and for creating and deleting a database, which must
    /// not hold it open (`Route.leasesDatabase`).
    let leased: Database?

    package var user: UserContext { request.user }
    package var query: QueryParameters { request.query }

    /// The leased database.
    /// - Throws: 404 when the route names none (a table row whose handler needs one on a server path).
    package func database() throws(CouchError) -> Database {
        guard let leased else { throw .notFound("missing") }
        return leased
    }

    /// The database name a route captured as `{db}`.
    package func databaseName() throws(CouchError) -> String {
        guard let name = parameters.database else { throw .notFound("missing") }
        return name
    }

    /// A capture of the route's pattern (`{doc}`, `{design}`, `{path…}`, …).
    package func parameter(_ key: String) throws(CouchError) -> String {
        guard let value = parameters[key] else { throw .notFound("missing") }
        return value
    }

    /// The document a route names: `{doc}`, or `_design/{design}`, or `_local/{local}`, checked as an id
    /// (`DocumentID.validate`), so every route that names one refuses a bad id the same way.
    func docID() throws(CouchError) -> String {
        let id: String
        if let doc = parameters["doc"] {
            id = doc
        } else if let design = parameters["design"] {
            id = "_design/" + design
        } else if let local = parameters["local"] {
            id = "_local/" + local
        } else {
            throw .notFound("missing")
        }
        try DocumentID.validate(id)
        return id
    }
}
