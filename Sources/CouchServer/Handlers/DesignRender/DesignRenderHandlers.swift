import CouchCrypto
import CouchStore
import CouchWire
import QueryServer
import RevTree

/// `_show`, `_list` and `_update` design functions (CouchDB's `couch_mrview_show`), run in the query-server
/// workers: `/db/_design/d/_show/s[/docid]`, `/db/_design/d/_list/l/view` and `…/_list/l/otherddoc/view`,
/// `/db/_design/d/_update/u[/docid]`. An update's document is stored through `DocumentWriter`, so design documents
/// stay their admins' and `validate_doc_update` applies.
struct DesignRenderHandlers: Sendable {
    let queryServer: QueryServer
    let writer: DocumentWriter
    let requestObject: DesignRequestObject
    let views: ViewHandlers
    /// `_all_docs` rows, which a list may read as it reads a view's.
    let allDocs: AllDocsHandlers

    /// Largest request body handed to a show or update function (it crosses to the worker as one string).
    static let maxBodyBytes = Limits.documentBytes

    /// couch_mrview_show: a `_show`, `_list` or `_update` path without a function name.
    static func refuseInvalidPath(_ error: String) throws -> Never {
        throw CouchError.designFunction(status: 404, error: error, reason: "Invalid path.")
    }

    // MARK: Show

    /// `/db/_design/d/_show/s[/docid]`, any method: the function gets the document (null when there is none).
    func show(_ c: RequestContext) throws -> Response {
        let call = try DocumentCall(self, c, section: "shows", capture: "show")
        let etag = Self.showETag(call, c)
        if c.request.ifNoneMatch(etag) { return .bytes(.notModified, [], headers: ["ETag": etag]) }
        let rendered = try Self.run { () throws(QueryServerError) in
            try queryServer.show(call.ddoc, name: call.name, doc: call.doc, request: call.req)
        }
        return try ExternalResponse(rendered).response(adding: [("ETag", etag), ("Vary", "Accept")])
    }

    /// CouchDB's show ETag (`show_etag`): the design document's and the document's revisions, `Accept` and the
    /// user's roles; the user's name and the request target too here (CouchDB leaves them out), so `?format=` or
    /// anything else the function reads from the URL or `userCtx` cannot be answered 304 from another's copy.
    private static func showETag(_ call: DocumentCall, _ c: RequestContext) -> String {
        var parts = [call.ddoc.key, call.doc.objectValue?["_rev"]?.stringValue ?? "", c.request.head.target]
        parts.append(c.request.head.headers["Accept"] ?? "")
        parts.append(c.user.name?.text ?? "")
        parts += c.user.roles.map(\.text)
        let digest = Digest.hash(.md5, Array(parts.joined(separator: "\u{0}").utf8))
        return "\"" + digest.hexString + "\""
    }

    // MARK: Update

    /// `/db/_design/d/_update/u[/docid]`: POST without an id, PUT (or POST) with one. The returned document is
    /// written as the requesting user; the response says its new revision (`X-Couch-Update-NewRev`, 201).
    func update(_ c: RequestContext) throws -> Response {
        let call = try DocumentCall(self, c, section: "updates", capture: "update")
        let outcome = try Self.run { () throws(QueryServerError) in
            try queryServer.update(call.ddoc, name: call.name, doc: call.doc, request: call.req)
        }
        guard let document = outcome.document else {
            return try ExternalResponse(outcome.response).response()
        }
        let input = try DocumentInput(document)
        guard let id = input.id, !id.isEmpty else { throw CouchError.illegalDocID("Document id must not be empty") }
        try DocumentID.validate(id)
        let rev = try writer.writeOne(
            call.database, docID: id, input: input, base: input.rev, newEdits: true, followed: nil, user: c.user)
        var response = ExternalResponse(status: 201)
        try response.apply(outcome.response.object)
        return response.response(
            adding: [("X-Couch-Update-NewRev", rev.description), ("X-Couch-Id", PercentEncoding.encode(id))])
    }

    // MARK: List

    /// `/db/_design/d/_list/l/[otherddoc/]view` (GET, HEAD, POST with `keys`): the view's rows, queried with every
    /// `_view` parameter, go one at a time to the list function, and what it sends streams to the client. The view
    /// may be `_all_docs` (`chttpd_show:handle_view_list`). As in CouchDB 3.4, a list's response has no `ETag`
    /// (the clustered list never sets one) and is never 304.
    func list(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        let name = try c.parameter("list")
        let ddoc = try function(database, c, section: "lists", name: name)
        let viewDesign = try c.parameters["viewDesign"] ?? c.parameter("design")
        let view = try c.parameter("view")
        // A POST's body is read once, for the query and for `req.body` (CouchDB hands the list the parsed object).
        let body = try c.request.postedQueryBody()
        let req = try requestObject.json(database, c.request, id: nil, body: body.map { .parsed($0) } ?? .none)
        if view == "_all_docs" {
            guard try DesignFunctionCache.designDocument(database, "_design/" + viewDesign) != nil else {
                throw CouchError.notFound("missing")
            }
        }
        // The status and headers are the function's `start()`, named as its first chunk goes out.
        return .stream(.ok) { [queryServer, allDocs, views] stream in
            var sink = ListRowSink(server: queryServer, ddoc: ddoc, name: name, request: req, stream: stream)
            defer { sink.close() }
            do {
                if view == "_all_docs" {
                    try allDocs.list(c, body: body, into: &sink)
                } else {
                    try views.query(c, design: viewDesign, view: view, body: body, into: &sink)
                }
            } catch let error as QueryServerError {
                throw Self.couchError(error)
            }
        }
    }

    // MARK: Shared

    /// What a show or an update function is called with: its design document, the document the path names (null
    /// when missing or when none is named) and the `req` object, body included.
    private struct DocumentCall {
        let database: Database
        let name: String
        let ddoc: DesignDocument
        let doc: JSON
        let req: JSON

        init(_ handlers: DesignRenderHandlers, _ c: RequestContext, section: String, capture: String) throws {
            database = try c.database()
            name = try c.parameter(capture)
            ddoc = try handlers.function(database, c, section: section, name: name)
            let docID = c.parameters["path"]
            let body = try handlers.readBody(c.request)
            req = try handlers.requestObject.json(database, c.request, id: docID, body: body)
            doc = try docID.map { [database] id in try handlers.openDocument(database, id) } ?? .null
        }
    }

    /// The design document, which must hold `section.name` (CouchDB: 404 `missing json key`).
    private func function(_ database: Database, _ c: RequestContext, section: String, name: String) throws
        -> DesignDocument
    {
        let id = "_design/" + (try c.parameter("design"))
        guard let ddoc = try DesignFunctionCache.designDocument(database, id) else {
            throw CouchError.notFound("missing")
        }
        guard let functions = ddoc.body[section]?.objectValue else {
            throw CouchError.notFound("missing json key: \(section)")
        }
        guard functions[name] != nil else { throw CouchError.notFound("missing json key: \(name)") }
        return ddoc
    }

    /// The request's body as the function sees it, at most `maxBodyBytes`: none (`"undefined"`) when the request
    /// has no body at all, empty for `Content-Length: 0`, as mochiweb reads it.
    private func readBody(_ request: Request) throws -> DesignRequestObject.Body {
        guard request.body.contentLength != nil || request.body.isChunked else { return .none }
        return .raw(try request.rawBody(limit: Self.maxBodyBytes))
    }

    /// The winning revision with its `_conflicts` (`couch_httpd_db:couch_doc_open(Db, Id, nil, [conflicts])`),
    /// null when missing or deleted.
    private func openDocument(_ database: Database, _ id: String) throws -> JSON {
        guard let info = try database.document(id), !info.deleted, let revision = try database.revision(id, rev: nil),
            !revision.deleted
        else { return .null }
        var options = RenderOptions()
        options.conflicts = true
        return .object(try DocumentRenderer(id: id, info: info, options: options, inline: nil).render(revision))
    }

    private static func run<T>(_ body: () throws(QueryServerError) -> T) throws(CouchError) -> T {
        do { return try body() } catch { throw couchError(error) }
    }

    /// A design function's failure with the status CouchDB gives its error (`chttpd:error_info`).
    static func couchError(_ error: QueryServerError) -> CouchError {
        let statuses = [
            "bad_request": 400, "unauthorized": 401, "forbidden": 403, "not_found": 404, "method_not_allowed": 405,
            "not_acceptable": 406, "conflict": 409,
        ]
        return .designFunction(status: statuses[error.error] ?? 500, error: error.error, reason: error.reason)
    }
}

extension DesignRenderHandlers: RouteCollection {
    package var routes: [Route] {
        let every = HTTPMethod.allCases
        return [
            Route(every, "/{db}/_design/{design}/_show", .member) { _ in try Self.refuseInvalidPath("show_error") },
            Route(every, "/{db}/_design/{design}/_show/{show}", .member, body: .document, show),
            Route(every, "/{db}/_design/{design}/_show/{show}/{path…}", .member, body: .document, show),
            Route(every, "/{db}/_design/{design}/_list", .member) { _ in try Self.refuseInvalidPath("list_error") },
            Route(every, "/{db}/_design/{design}/_list/{list}", .member) { _ in
                try Self.refuseInvalidPath("list_error")
            },
            Route(
                [.GET, .POST, .HEAD], "/{db}/_design/{design}/_list/{list}/{view}", .member, body: .bulk,
                notAllowedReason: "GET,POST,HEAD", list),
            Route(
                [.GET, .POST, .HEAD], "/{db}/_design/{design}/_list/{list}/{viewDesign}/{view}", .member, body: .bulk,
                notAllowedReason: "GET,POST,HEAD", list),
            Route(every, "/{db}/_design/{design}/_update", .member) { _ in
                try Self.refuseInvalidPath("update_error")
            },
            Route(every, "/{db}/_design/{design}/_update/{update}", .member, body: .document, update),
            Route(every, "/{db}/_design/{design}/_update/{update}/{path…}", .member, body: .document, update),
            Route(every, "/{db}/_design/{design}/_rewrite/{path…?}", .member) { _ in
                // Deprecated in CouchDB 3: it rewrites URLs rather than serve data.
                throw CouchError.notImplemented(
                    "couchlite does not run _rewrite rules (deprecated in CouchDB 3): address the database directly.")
            },
        ]
    }
}
