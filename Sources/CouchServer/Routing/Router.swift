import CouchWire

/// Finds the route of a request in the table: the first row whose pattern matches the path (rows with the same
/// pattern form one path, answered by the row that lists the method). Knows nothing of users: what it resolves is
/// then authorized from the row it names (`RequestAuthorizer`).
struct Router: Sendable {
    let routes: [Route]

    /// What the table says about one request.
    enum Resolution {
        /// A row answers it.
        case route(Route, RouteParameters)
        /// The path is routed but not for this method: 405 with `Allow`, after the least demanding access rule of
        /// the path's rows (so that nobody learns more from a 405 than from a 401).
        /// `allowed` is CouchDB's list for the path (`GET,HEAD`), both its `Allow` header and its reason's words.
        case methodNotAllowed(allowed: String, access: Access, RouteParameters)
        /// No row has this path: nothing is authorized, and the request is refused by `Unrouted`.
        case unrouted(Unrouted)

        /// The database the path names, if any.
        package var database: String? {
            switch self {
            case .route(_, let parameters), .methodNotAllowed(_, _, let parameters): parameters.database
            case .unrouted(let unrouted): unrouted.database
            }
        }
    }

    /// A path no row matches, with the access rule of its namespace (server routes are server admins'; a
    /// database's paths are its members') and the error it is answered with once that rule passed.
    struct Unrouted: Sendable {
        let access: Access
        package let database: String?
        let error: CouchError
    }

    /// The table's paths: the rows of one pattern, in the order the pattern first appears. Grouped once, so a request
    /// matches each pattern once and collects nothing.
    private let paths: [(pattern: PathPattern, rows: [Route])]

    /// - Parameter routes: The rows in any order: the paths are tried most specific first, and of one path's rows
    ///   those confined to a database (`onlyIn`) before the general ones.
    init(_ routes: [Route]) {
        self.routes = routes
        var paths: [(pattern: PathPattern, rows: [Route])] = []
        for route in routes {
            if let index = paths.firstIndex(where: { $0.pattern == route.pattern }) {
                paths[index].rows.append(route)
            } else {
                paths.append((route.pattern, [route]))
            }
        }
        for index in paths.indices {
            paths[index].rows =
                paths[index].rows.filter { $0.onlyIn != nil }
                + paths[index].rows.filter {
                    $0.onlyIn == nil
                }
        }
        // A stable insertion sort: paths of equal rank keep the order they came in.
        var ordered: [(pattern: PathPattern, rows: [Route])] = []
        for path in paths {
            let position = ordered.firstIndex { path.pattern.isMoreSpecific(than: $0.pattern) } ?? ordered.count
            ordered.insert(path, at: position)
        }
        self.paths = ordered
    }

    func resolve(method: String, segments raw: [String]) -> Resolution {
        let segments = Router.normalize(raw)
        let verb = HTTPMethod(method)
        for path in paths {
            guard let parameters = path.pattern.match(segments) else { continue }
            let database = parameters.database
            guard path.rows.contains(where: { $0.applies(to: database) }) else { continue }
            if let verb, let route = path.rows.first(where: { $0.methods.contains(verb) && $0.applies(to: database) }) {
                return .route(route, parameters)
            }
            return Router.methodNotAllowed(path.rows.filter { $0.applies(to: database) }, parameters)
        }
        return .unrouted(Router.unrouted(segments))
    }

    /// A routed path whose rows do not list the method: CouchDB's list of the methods it allows there (a row's own
    /// where CouchDB's differs from the rows', else the rows' methods in CouchDB's order) and the least demanding
    /// access rule of the rows.
    private static func methodNotAllowed(_ rows: [Route], _ parameters: RouteParameters) -> Resolution {
        var methods: [HTTPMethod] = []
        for route in rows { for verb in route.methods where !methods.contains(verb) { methods.append(verb) } }
        let allowed =
            rows.lazy.compactMap(\.notAllowedReason).first
            ?? methods.sorted { $0.listOrder < $1.listOrder }.map(\.rawValue).joined(separator: ",")
        let access = rows.map(\.access).min { $0.demand < $1.demand } ?? .serverAdmin
        return .methodNotAllowed(allowed: allowed, access: access, parameters)
    }

    /// `_local/x` and `_design/x` as the table spells them, two segments, when the client sent the slash as `%2F`
    /// (`/db/_local%2Fx`, `/db/_design%2Fx`). A design document's one-segment spelling names the document only, as
    /// in CouchDB: `/db/_design%2Fx/att` is not an attachment of it.
    static func normalize(_ segments: [String]) -> [String] {
        guard segments.count >= 2 else { return segments }
        let second = segments[1]
        for prefix in ["_local/", "_design/"] where second.hasBytePrefix(prefix) {
            if prefix == "_design/" && segments.count > 2 { return segments }
            // The prefix is ASCII, so what follows it is whole UTF-8.
            let name = String(decoding: Array(second.utf8.dropFirst(prefix.utf8.count)), as: UTF8.self)
            var split = segments
            split.replaceSubrange(1...1, with: [String(prefix.dropLast()), name])
            return split
        }
        return segments
    }

    /// How a path no row has is refused: CouchDB's answers for the namespace it is in.
    static func unrouted(_ segments: [String]) -> Unrouted {
        guard let first = segments.first, !first.hasBytePrefix("_") || App.isSystemDatabase(first) else {
            return Unrouted(access: .serverAdmin, database: nil, error: .notFound("missing"))
        }
        let second = segments.count > 1 ? segments[1] : ""
        if second == "_design" || !second.hasBytePrefix("_") {
            return Unrouted(access: .member, database: first, error: .notFound("missing"))
        }
        return Unrouted(
            access: .member, database: first,
            error: .illegalDocID("Only reserved document ids may start with underscore."))
    }
}

extension Access {
    /// How much a rule asks of the caller, for choosing the least demanding rule of a path's rows.
    var demand: Int {
        switch self {
        case .anyone: 0
        case .usersMember, .usersOwnDocument, .usersDesignRead: 1
        case .member, .memberListing: 2
        case .databaseAdmin, .maintenanceAdmin: 3
        case .metricsReader, .serverAdmin: 4
        }
    }
}
