import CouchQuery
import CouchStore
import CouchWire
import QueryServer

/// `GET/POST /db/_changes` with every feed type.
struct ChangesHandlers: Sendable {
    /// Counts the feeds that wait (`clients_requesting_changes`).
    let metrics: ServerMetrics
    /// The engine that maps the documents of `filter=_view` (read per request: tests swap it).
    let views: ViewIndexes
    /// Runs the filter functions of `filter=ddoc/name`.
    let queryServer: QueryServer
    /// The `_security` objects a filter's `req.secObj` shows.
    package let security: SecurityStore
    /// Streams the inline attachments of `include_docs&attachments=true`.
    let blobs: BlobRegistry
    /// Whether a compaction runs, for a filter's `req.info` (the database's info as `GET /db` answers it).
    let compactions: Compactions
    /// Where a `filter=_selector`'s `$regex` programs are reserved (the server's, shared with `_find`).
    var regexMemory = RegexMemory.server
    /// CPU time the `$regex` matches of one catch-up of a `filter=_selector` feed may take together.
    var regexBudgetNanoseconds = RegexBudget.defaultNanoseconds

    func feed(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        let request = c.request
        if request.verb == .POST { try request.requireJSONContent() }
        let query = try ChangesQuery(request, database: database, regexMemory: regexMemory)
        let filterRequest: JSON
        if case .function = query.filter {
            filterRequest = try self.filterRequest(database, request, body: query.body)
        } else {
            filterRequest = .null
        }
        return .stream(.ok, headers: ChangesFeed.headers(query)) { stream in
            var feed = ChangesFeed(
                database: database, query: query, stream: stream, engine: views.engine, queryServer: queryServer,
                blobs: blobs)
            feed.filterRequest = filterRequest
            feed.regexBudgetNanoseconds = regexBudgetNanoseconds
            // CouchDB's `clients_requesting_changes`: feeds that wait, from the network (the replicator's
            // in-process connections carry no client address).
            let counted = query.feed != .normal && request.head.remoteAddress != nil
            if counted { metrics.changesFeedOpened() }
            defer { if counted { metrics.changesFeedClosed() } }
            try feed.run()
        }
    }
}

extension ChangesHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(
                read + [.POST], "/{db}/_changes", .memberListing, body: .bulk, notAllowedReason: "GET,POST,HEAD", feed)
        ]
    }
}
