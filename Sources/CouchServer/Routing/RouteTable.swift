import CouchWire

/// The route table: every path couchlite answers, who may call it, what they may send, and its handler. Each handler
/// group declares its rows (`RouteCollection`) and the app joins them; the most specific pattern that matches names
/// the path (`Router`), and the rows with that same pattern answer it, each for its methods.
///
/// Adding an endpoint is one row in its group's `routes` and one handler function beside it.
extension App {
    /// A product's rows, then CouchDB's without the rows it takes over: a product row of a CouchDB pattern replaces
    /// every CouchDB row of that pattern sharing one of its methods (the gallery's `GET /`, a page for browsers and
    /// CouchDB's welcome for JSON clients), so no row of the joined table is shadowed.
    package static func joined(_ product: [Route], _ couchDB: [Route]) -> [Route] {
        product
            + couchDB.filter { row in
                !product.contains { $0.pattern == row.pattern && !Set($0.methods).isDisjoint(with: row.methods) }
            }
    }
}
