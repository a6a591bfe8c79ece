import CouchQuery
import CouchStore
import CouchWire

/// Mango: `POST /db/_find`, `POST /db/_explain`, `GET/POST /db/_index`, `DELETE /db/_index/{ddoc}/json/{name}`
/// and `POST /db/_index/_bulk_delete`. Json indexes are views of `"language":"query"` design documents, kept by
/// the view engine (``MangoViewEngine`` maps them natively).
struct MangoHandlers: Sendable {
    let views: ViewIndexes
    let documents: DocumentWriter
    /// CPU time one `_find`'s `$regex` matches may take together (`Options.regexBudgetMilliseconds`).
    var regexBudgetNanoseconds = RegexBudget.defaultNanoseconds
    /// Where the selectors' `$regex` programs are reserved while their requests run (the server's).
    var regexMemory = RegexMemory.server

    // MARK: _find and _explain

    func find(_ c: RequestContext) throws -> Response {
        let (database, options, plan) = try prepare(c)
        var cursor = MangoCursor(database: database, options: options, plan: plan, views: views)
        cursor.regexBudgetNanoseconds = regexBudgetNanoseconds
        return .stream(.ok) { stream in try cursor.run(stream) }
    }

    func explain(_ c: RequestContext) throws -> Response {
        let (database, options, plan) = try prepare(c)
        return .json(.ok, MangoExplain(database: database.name, options: options, plan: plan).json)
    }

    private func prepare(_ c: RequestContext) throws -> (Database, FindOptions, MangoPlan) {
        let database = try c.database()
        try c.request.requireJSONContent()
        let options = try FindOptions(
            try c.request.jsonObjectBody(limit: Limits.bulkRequestBytes), regexMemory: regexMemory)
        if let bookmark = options.bookmark { _ = try MangoBookmark(decoding: bookmark) }
        let plan = try MangoPlanner.plan(options, indexes: try MangoIndex.list(database))
        return (database, options, plan)
    }

    // MARK: _index

    /// `GET /db/_index[?limit=N&skip=M]`: every index (`_all_docs` first), a page of them when asked. As
    /// `mango_httpd`: a limit under 1, a negative skip or a non-integer is a 500 `invalid_list_index_params`; a skip
    /// past the end is an empty page; `total_rows` counts them all.
    func listIndexes(_ c: RequestContext) throws -> Response {
        let indexes = try MangoIndex.list(try c.database())
        let limit = try Self.indexListParameter(c.query["limit"]) ?? indexes.count
        let skip = try Self.indexListParameter(c.query["skip"]) ?? 0
        guard limit >= 1, skip >= 0 else { throw Self.invalidListIndexParameters }
        let page = indexes.dropFirst(min(skip, indexes.count)).prefix(limit)
        return .json(
            .ok, .object(JSONObject([("total_rows", .int(indexes.count)), ("indexes", .array(page.map(\.json)))])))
    }

    private static let invalidListIndexParameters = CouchError.mango(
        "invalid_list_index_params", "Index parameter ranges: limit > 1, skip > 0", status: 500)

    /// An integer as Erlang's `list_to_integer` reads one (an optional sign, then digits), nil when absent.
    private static func indexListParameter(_ text: String?) throws(CouchError) -> Int? {
        guard let text else { return nil }
        let digits = text.first == "-" || text.first == "+" ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text) else {
            throw invalidListIndexParameters
        }
        return value
    }

    func createIndex(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        try c.request.requireJSONContent()
        let request = try IndexRequest(try c.request.jsonObjectBody(limit: Limits.smallRequestBytes))
        let current = try database.revision(request.designID, rev: nil).flatMap { $0.deleted ? nil : $0 }
        var body = JSONObject([("language", "query")])
        if let bytes = current?.body, case .object(let existing) = try JSON.parse(bytes) {
            try Self.requireQueryLanguage(existing)
            body = existing
        }
        var views = body["views"]?.objectValue ?? JSONObject()
        let view = request.index.viewJSON
        let answer = { (result: String) in
            JSON.object(
                JSONObject([
                    ("result", .string(result)), ("id", .string(request.designID)), ("name", .string(request.name)),
                ]))
        }
        if views[request.name] == view { return .json(.ok, answer("exists")) }
        views[request.name] = view
        body["views"] = .object(views)
        try save(database, request.designID, current, body: .object(body), deleted: false, c)
        return .json(.ok, answer("created"))
    }

    /// `mango_util:check_lang/1`: an index goes only into a design document of language `query` (a JavaScript
    /// one's views are left alone), else 400 with the member as Erlang prints it (`false` when there is none).
    private static func requireQueryLanguage(_ design: JSONObject) throws(CouchError) {
        guard let language = design.first(where: { $0.key.utf8Equals("language") })?.value else {
            throw CouchError.mango("invalid_ddoc_lang", "Existing design doc has an invalid language: false")
        }
        if case .string(let name) = language, name.utf8Equals("query") { return }
        let member = "{\(ErlangText.format(.string("language"))),\(ErlangText.format(language))}"
        throw CouchError.mango("invalid_ddoc_lang", "Existing design doc has an invalid language: \(member)")
    }

    func deleteIndex(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        var parts = try c.parameter("path").split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.first == "_design" { parts.removeFirst() }
        guard parts.count == 3 else { throw CouchError.badRequest("Invalid index path") }
        let designID = "_design/" + parts[0]
        guard parts[1] == "json", try removeIndex(database, designID, name: parts[2], c) else {
            throw CouchError.notFound("missing")
        }
        return .json(.ok, ["ok": true])
    }

    func bulkDelete(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        try c.request.requireJSONContent()
        let body = try c.request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        guard case .array(let ids)? = body["docids"], ids.allSatisfy({ $0.stringValue != nil }) else {
            let value = body["docids"] ?? .null
            throw CouchError.mango(
                "invalid_bulk_docs",
                "Bulk Delete requires an array of non-null docids. Docids: \(ErlangText.format(value))")
        }
        var success: [JSON] = []
        var fail: [JSON] = []
        for id in ids.compactMap(\.stringValue) {
            let designID = id.hasPrefix("_design/") ? id : "_design/" + id
            let current = try database.revision(designID, rev: nil)
            guard let current, !current.deleted else {
                fail.append(.object(JSONObject([("id", .string(designID)), ("error", "not_found")])))
                continue
            }
            try save(database, designID, current, body: .object(JSONObject()), deleted: true, c)
            success.append(.object(JSONObject([("id", .string(designID)), ("ok", true)])))
        }
        return .json(.ok, .object(JSONObject([("success", .array(success)), ("fail", .array(fail))])))
    }

    /// Removes view `name` from a query design document, deleting the document when nothing else is left in it
    /// (`mango_idx:delete/4`); false when there is no such index.
    private func removeIndex(_ database: Database, _ designID: String, name: String, _ c: RequestContext) throws
        -> Bool
    {
        guard let current = try database.revision(designID, rev: nil), !current.deleted, let bytes = current.body,
            case .object(var body) = try JSON.parse(bytes),
            MangoIndex.indexes(designID: designID, document: .object(body)).contains(where: { $0.name == name }),
            var views = body["views"]?.objectValue
        else { return false }
        _ = views.removeValue(forKey: name)
        if views.isEmpty { _ = body.removeValue(forKey: "views") } else { body["views"] = .object(views) }
        let empty = body.count == 1 && body["language"] == "query"
        try save(database, designID, current, body: .object(empty ? JSONObject() : body), deleted: empty, c)
        return true
    }

    /// Writes a design document revision as the requesting user (design documents are their admins').
    private func save(
        _ database: Database, _ designID: String, _ current: StoredRevision?, body: JSON, deleted: Bool,
        _ c: RequestContext
    ) throws {
        var object = body.objectValue ?? JSONObject()
        _ = object.removeValue(forKey: "_id")
        _ = object.removeValue(forKey: "_rev")
        let stubs = (current?.attachments ?? []).map {
            AttachmentRef.stub(name: $0.name, revpos: $0.revpos, digest: $0.digest)
        }
        let write = RevisionWrite(
            docID: designID, path: current.map { [$0.rev] } ?? [], deleted: deleted,
            body: JSON.object(object).serialized(), attachments: deleted ? [] : stubs)
        let outcome = try documents.applyEdit(database, write, user: c.user)
        if case .failure(let error) = outcome.result { throw CouchError(error, docID: designID) }
    }
}

extension MangoHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route([.POST], "/{db}/_find", .member, body: .bulk, notAllowedReason: "POST", find),
            Route([.POST], "/{db}/_explain", .member, body: .bulk, notAllowedReason: "POST", explain),
            Route(read, "/{db}/_index", .member, notAllowedReason: "GET,POST", listIndexes),
            Route([.POST], "/{db}/_index", .databaseAdmin, body: .small, createIndex),
            Route(
                [.POST], "/{db}/_index/_bulk_delete", .databaseAdmin, body: .bulk, notAllowedReason: "POST", bulkDelete),
            Route([.DELETE], "/{db}/_index/{path…}", .databaseAdmin, notAllowedReason: "DELETE", deleteIndex),
        ]
    }
}
