import CouchWire
import Testing

@testable import CouchServer

/// Walks the table a server answers from: CouchDB's rows (`App.routeTable`) joined with the gallery's
/// (`GalleryRoutes`). Every row is well formed and reachable, no two rows claim the same request, every row that
/// takes a body caps it, and a path with no row is refused to everyone, server admins included.
@Suite final class RouteTableTests {
    let server: InProcessServer
    let table: [Route]
    let router: Router

    init() throws {
        server = try InProcessServer()
        router = server.app.router
        table = router.routes
    }

    deinit { server.shutdown() }

    /// Rows that accept POST, PUT or COPY but read no body, so `.none` is right for them; each with its reason.
    /// A new row that takes a body must name its limit instead of landing here.
    static let bodilessWrites: [String: String] = [
        "/{db}": "PUT creates the database from its name alone (POST, which writes a document, is its own row)",
        "/{db}/_ensure_full_commit": "a replicator's no-op: CouchDB ignores the body, and so does couchlite",
        "/{db}/_sync_shards": "one shard, nothing to synchronize: CouchDB reads no body, and neither does couchlite",
        "/{db}/{doc}": "COPY names its destination in a header and copies a stored revision: no body",
        "/{db}/_design/{design}": "COPY names its destination in a header and copies a stored revision: no body",
        "/_node": "refused (400 Incomplete path) whatever the method",
        "/_node/{node}/{path…}": "no endpoint there: refused (404) whatever the method",
        "/{db}/_temp_view": "410: temporary views are gone",
        "/{db}/_local": "400: `_local` needs exactly one more segment",
        "/{db}/_local/{local}": "POST: 415 unless an HTML form's, then 400: a `_local` document takes no attachment",
        "/{db}/_local/{local}/{path…}": "400: `_local` documents have no attachments",
        "/{db}/_design/{design}/_view": "404: no view named",
        "/{db}/_design/{design}/_view/{view}/{path…}": "404: nothing under a view",
        "/{db}/_design/{design}/_show": "404 show_error: no show named",
        "/{db}/_design/{design}/_list": "404 list_error: no list named",
        "/{db}/_design/{design}/_list/{list}": "404 list_error: no view named",
        "/{db}/_design/{design}/_update": "404 update_error: no update named",
        "/{db}/_design/{design}/_rewrite/{path…?}": "501: _rewrite is not run",
        "/_photos/api/db/{db}/uploads": "POST starts an upload from its query (name, length, sha256): no body",
        "/_photos/{path…}": "nothing of the gallery's there: 404 whatever the method",
    ]

    /// Paths no row has: each resolves to `.unrouted`, whatever the method.
    static let unroutedPaths: [[String]] = [
        ["_foo"], ["_foo", "bar"], ["_utils"], ["_config"], ["_stats"],
        ["_cluster_setup"], ["_reshard"], ["_uuids", "x"], ["_all_dbs", "x"], ["_session", "x"],
        ["_scheduler"], ["_scheduler", "x"], ["_replicate", "x"],
        ["db", "_purged_infos"], ["db", "_shards", "a", "b"], ["db", "_sync_shards", "x"],
        ["db", "_foo"], ["db", "_design"], ["db", "_all_docs", "x"], ["db", "_design_docs", "queries", "x"],
        ["db", "_changes", "x"], ["db", "_bulk_docs", "x"], ["db", "_security", "x"],
        ["_users", "_foo"], ["_replicator", "_foo"], ["_users", "_design"],
    ]

    /// Paths whose rows exist only to refuse them (no endpoint behind): routed, but answered 4xx to everyone.
    static let refusingPaths: [[String]] = [
        ["_node"], ["_node", "_local", "_config", "couchdb", "x", "y"],
        ["db", "_design", "d", "_view"], ["db", "_design", "d", "_view", "v", "x"], ["db", "_local"],
        ["db", "_local", "x", "y"], ["db", "_design", "d", "_show"], ["db", "_design", "d", "_list"],
        ["db", "_design", "d", "_list", "l"], ["db", "_design", "d", "_update"], ["_photos", "api"],
        ["_photos", "api", "nothing", "here"],
    ]

    // MARK: Rows

    @Test func everyRowHasMethodsAndAPatternThatParsesToWhatItSays() {
        for route in table {
            let name = route.pattern.description
            #expect(!route.methods.isEmpty, "\(name) has no methods")
            #expect(Set(route.methods).count == route.methods.count, "\(name) lists a method twice")
            #expect(RouteTableTests.render(route.pattern.segments) == name, "\(name) parses otherwise")
            #expect(PathPattern(name) == route.pattern)
            // A `{rest…}` capture takes every remaining segment, so it can only come last.
            for (index, segment) in route.pattern.segments.enumerated() {
                if case .rest = segment {
                    #expect(index == route.pattern.segments.count - 1, "\(name): {…} before the end")
                }
            }
        }
    }

    @Test func everyRowNamesAnAccessRuleThatFitsItsPath() {
        for route in table {
            let name = route.pattern.description
            let namesDatabase = route.pattern.segments.contains(.database)
            // A rule that needs the database on a path that names none would answer 404 to everyone.
            if route.access.needsDatabase {
                #expect(namesDatabase, "\(name): \(route.access) needs a {db}")
            }
            // `_users`' own rules only on rows confined to `_users`, and those rows only there.
            let usersRule = [Access.usersMember, .usersOwnDocument, .usersDesignRead].contains(route.access)
            if usersRule { #expect(route.onlyIn == App.usersDatabase, "\(name): \(route.access) outside _users") }
            if let only = route.onlyIn {
                #expect(only == App.usersDatabase && namesDatabase, "\(name) confined to \(only)")
            }
            // The drop credentials' database scopes need the database in the path.
            if [DropScope.ownDatabase, .upload, .checkpoint, .exists].contains(route.drop) {
                #expect(route.pattern.segments.contains(.database), "\(name): drop \(route.drop) without {db}")
            }
            if route.drop == .checkpoint { #expect(route.pattern.description.contains("{local}"), "\(name)") }
        }
    }

    /// Who may call a database's route is decided by its row, before any handler runs: no row that names a `{db}`,
    /// wherever in its path, lets anyone in and leaves the database's `_security` to its handler, and every such row
    /// holds its database open for the request (`leasesDatabase`) but creating and deleting one.
    @Test func everyRowThatNamesADatabaseIsAuthorizedAndLeasedByItsRow() {
        var galleryRows = 0
        for route in table where route.pattern.segments.contains(.database) {
            let name = route.pattern.description
            let decided = route.access.needsDatabase || route.access == .serverAdmin
            #expect(decided, "\(name): \(route.access) leaves the database's _security to its handler")
            let createsOrDeletes =
                route.pattern.segments == [.database] && route.methods.allSatisfy { [.PUT, .DELETE].contains($0) }
            #expect(route.leasesDatabase == !createsOrDeletes, "\(name) \(route.methods.map(\.rawValue))")
            if name.hasPrefix("/_photos/") { galleryRows += 1 }
        }
        // The walk covers the gallery's rows (a table without them would pass the loop above vacuously for them).
        #expect(galleryRows == 11)
    }

    @Test func everyRowThatTakesABodyNamesItsLimit() {
        let bodyMethods: Set<HTTPMethod> = [.POST, .PUT, .COPY]
        var bodiless: Set<String> = []
        for route in table where !bodyMethods.isDisjoint(with: route.methods) && route.body == .none {
            let name = route.pattern.description
            bodiless.insert(name)
            #expect(
                RouteTableTests.bodilessWrites[name] != nil,
                "\(name) (\(route.methods.map(\.rawValue))) accepts a body but names no limit")
        }
        // The list stays exact: a row that gained a limit leaves it.
        #expect(bodiless == Set(RouteTableTests.bodilessWrites.keys))
        // And no row names a limit it can never use.
        for route in table where route.body != .none {
            #expect(!bodyMethods.isDisjoint(with: route.methods), "\(route.pattern) caps a body it never takes")
        }
    }

    @Test func noTwoRowsOfOnePathShareAMethod() {
        for (index, route) in table.enumerated() {
            for other in table[(index + 1)...] where other.pattern == route.pattern && other.onlyIn == route.onlyIn {
                let shared = Set(route.methods).intersection(other.methods)
                #expect(shared.isEmpty, "\(route.pattern) lists \(shared.map(\.rawValue)) on two rows")
            }
        }
    }

    /// Each row answers a path made from its own pattern, for each of its methods: no earlier row shadows it
    /// entirely.
    @Test func everyRowIsReachable() {
        for route in table {
            let path = RouteTableTests.samplePath(route)
            for method in route.methods {
                guard case .route(let found, _) = router.resolve(method: method.rawValue, segments: path) else {
                    Issue.record("\(method) /\(path.joined(separator: "/")) does not reach \(route.pattern)")
                    continue
                }
                let same =
                    found.pattern == route.pattern && found.onlyIn == route.onlyIn && found.methods == route.methods
                #expect(
                    same, "\(method) /\(path.joined(separator: "/")) reaches \(found.pattern), not \(route.pattern)")
            }
        }
    }

    /// The joined table's order is not the router's: built from the rows reversed, or from its groups joined the
    /// other way round, every path resolves to the same row (the most specific pattern wins, a path's
    /// database-confined rows before the general ones), so a group that adds rows cannot shadow another's.
    @Test func theTableAnswersTheSameInAnyOrder() {
        let reversed = Router(table.reversed())
        var rotated = table
        rotated.append(contentsOf: rotated.prefix(table.count / 2))
        rotated.removeFirst(table.count / 2)
        for other in [reversed, Router(rotated)] {
            for route in table {
                let path = RouteTableTests.samplePath(route)
                for method in HTTPMethod.allCases {
                    let mine = RouteTableTests.describe(router.resolve(method: method.rawValue, segments: path))
                    let theirs = RouteTableTests.describe(other.resolve(method: method.rawValue, segments: path))
                    #expect(mine == theirs, "\(method) /\(path.joined(separator: "/")): \(mine) vs \(theirs)")
                }
            }
        }
    }

    /// A literal beats a capture and a capture the rest of the path, segment by segment; of two patterns equal as
    /// far as the shorter goes, the shorter wins (an optional rest matches it too).
    @Test func specificityIsSegmentBySegment() {
        func more(_ a: String, _ b: String) -> Bool { PathPattern(a).isMoreSpecific(than: PathPattern(b)) }
        #expect(more("/_node/{node}/_stats", "/_node/{node}/{path…}"))
        #expect(!more("/_node/{node}/{path…}", "/_node/{node}/_stats"))
        #expect(more("/{db}/_design/{design}/_view/{view}", "/{db}/_design/{design}/{path…}"))
        #expect(more("/_photos/api/dbs", "/_photos/{path…}"))
        #expect(more("/_photos/{asset}", "/_photos/{path…}"))
        #expect(more("/x", "/x/{path…?}"))
        #expect(!more("/x/{path…?}", "/x"))
        #expect(!more("/{db}", "/{db}"))
    }

    // MARK: Paths without a row

    @Test func pathsWithoutARowAreUnrouted() {
        for path in RouteTableTests.unroutedPaths {
            for method in HTTPMethod.allCases {
                guard case .unrouted(let unrouted) = router.resolve(method: method.rawValue, segments: path) else {
                    Issue.record("\(method) /\(path.joined(separator: "/")) has a route")
                    continue
                }
                // Refused in its namespace: the server's to server admins, a database's to its members.
                if path[0].hasPrefix("_") && !App.systemDatabases.contains(path[0]) {
                    #expect(unrouted.access == .serverAdmin && unrouted.database == nil)
                } else {
                    #expect(unrouted.access == .member && unrouted.database == path[0])
                }
                #expect((400..<500).contains(unrouted.error.status))
            }
        }
    }

    @Test func noPathWithoutARowIsServedEvenToAServerAdmin() throws {
        try InProcessServer.with { server in
            try server.createDatabase("db")
            for path in RouteTableTests.unroutedPaths + RouteTableTests.refusingPaths {
                for method in ["GET", "PUT", "POST", "DELETE"] {
                    let r = try server.request(
                        method, "/" + path.joined(separator: "/"), as: InProcessServer.admin, json: "{}")
                    #expect((400..<500).contains(r.status), "\(method) /\(path.joined(separator: "/")): \(r)")
                    #expect(r.error != nil, "\(method) /\(path.joined(separator: "/")): \(r)")
                }
            }
            // And the server's namespace is the server admins': nobody else learns what is not there.
            for path in [["_dbs_info"], ["_foo"], ["_node", "_local", "_config"]] {
                let r = try server.request("GET", "/" + path.joined(separator: "/"))
                #expect(r.status == 401 && r.reason == "You are not a server admin.", "\(path): \(r)")
            }
        }
    }

    // MARK: Router.normalize

    @Test func normalizeSplitsTheEncodedSlashOfLocalAndDesignDocuments() {
        #expect(Router.normalize(["db", "_local/x"]) == ["db", "_local", "x"])
        #expect(Router.normalize(["db", "_design/x"]) == ["db", "_design", "x"])
        // A design document's one-segment spelling names the document only, not an attachment under it.
        #expect(Router.normalize(["db", "_design/x", "att"]) == ["db", "_design/x", "att"])
        // `_local/x/y` sent as one segment stays one document id after the prefix.
        #expect(Router.normalize(["db", "_local/x/y"]) == ["db", "_local", "x/y"])
        // What follows the prefix is kept whole, multi-byte characters included.
        #expect(Router.normalize(["db", "_local/é☃𝄞"]) == ["db", "_local", "é☃𝄞"])
        #expect(Router.normalize(["db", "_design/日本"]) == ["db", "_design", "日本"])
        // Nothing else changes.
        #expect(Router.normalize(["db", "_localx"]) == ["db", "_localx"])
        #expect(Router.normalize(["db", "doc/x"]) == ["db", "doc/x"])
        #expect(Router.normalize(["_local/x"]) == ["_local/x"])
        #expect(Router.normalize(["db", "x", "_local/y"]) == ["db", "x", "_local/y"])
        #expect(Router.normalize([]) == [])
    }

    @Test func encodedSlashesRouteAsTheSlashedSpelling() {
        func pattern(_ method: String, _ path: [String]) -> String? {
            guard case .route(let route, _) = router.resolve(method: method, segments: path) else { return nil }
            return route.pattern.description
        }
        #expect(pattern("PUT", ["db", "_local/x"]) == "/{db}/_local/{local}")
        #expect(pattern("GET", ["db", "_design/x"]) == "/{db}/_design/{design}")
        // `_design%2Fx/att` is not the attachment of `_design/x`: it names no row.
        #expect(pattern("GET", ["db", "_design/x", "att"]) == nil)
        #expect(pattern("GET", ["db", "_design", "x", "att"]) == "/{db}/_design/{design}/{path…}")
    }

    // MARK: Helpers

    /// What a resolution names, comparably: the row's pattern, methods and database, or the refusal.
    static func describe(_ resolution: Router.Resolution) -> String {
        switch resolution {
        case .route(let route, _):
            "route \(route.pattern) \(route.methods.map(\.rawValue)) \(route.onlyIn ?? "-")"
        case .methodNotAllowed(let allowed, let access, _): "405 \(allowed) \(access)"
        case .unrouted(let unrouted): "unrouted \(unrouted.access) \(unrouted.error)"
        }
    }

    static func render(_ segments: [PathPattern.Segment]) -> String {
        if segments.isEmpty { return "/" }
        return segments.map { segment -> String in
            switch segment {
            case .literal(let text): "/" + text
            case .database: "/{db}"
            case .document: "/{doc}"
            case .name(let key): "/{\(key)}"
            case .rest(let key, let optional): "/{\(key)…\(optional ? "?" : "")}"
            }
        }.joined()
    }

    /// A path the row's pattern matches, with a plain value for each capture.
    /// `{rest…}` takes two segments, so that a row with one capture in its place does not claim the path.
    static func samplePath(_ route: Route) -> [String] {
        route.pattern.segments.flatMap { segment in
            switch segment {
            case .literal(let text): [text]
            case .database: [route.onlyIn ?? "db"]
            case .document: ["doc"]
            case .name(let key): ["sample-\(key)"]
            case .rest(let key, _): ["sample-\(key)", "more"]
            }
        }
    }
}
