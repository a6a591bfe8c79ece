import CouchWire

/// The request methods couchlite routes on. A request with any other method matches no route's methods and is
/// answered 405 with the route's `Allow`.
package enum HTTPMethod: String, Sendable, CaseIterable {
    case GET, HEAD, POST, PUT, DELETE, COPY

    /// The method a request line names, compared by bytes (methods are case-sensitive: `get` is not `GET`).
    init?(_ text: String) {
        guard let method = HTTPMethod.allCases.first(where: { $0.rawValue.utf8Equals(text) }) else { return nil }
        self = method
    }

    /// The order CouchDB lists methods in its 405 reasons (`Only DELETE,GET,HEAD,POST,PUT,COPY allowed`).
    var listOrder: Int {
        switch self {
        case .DELETE: 0
        case .GET: 1
        case .HEAD: 2
        case .POST: 3
        case .PUT: 4
        case .COPY: 5
        }
    }
}
