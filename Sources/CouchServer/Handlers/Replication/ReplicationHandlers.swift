import CouchCrypto
import CouchStore
import CouchWire
import RevTree

/// The endpoints replicators drive besides document writes: `_revs_diff`, `_missing_revs`, `_bulk_get` (`_bulk_docs`
/// is the documents' group; the jobs that run replications are `ReplicationJobHandlers`).
struct ReplicationHandlers: Sendable {
    let documents: DocumentWriter
    let blobs: BlobRegistry

    /// `POST /db/_revs_diff`.
    func revsDiff(_ c: RequestContext) throws -> Response {
        try revsDiff(c.database(), c.request, missingRevsStyle: false)
    }

    /// `POST /db/_missing_revs`.
    func missingRevs(_ c: RequestContext) throws -> Response {
        try revsDiff(c.database(), c.request, missingRevsStyle: true)
    }
}

extension ReplicationHandlers {
    /// `POST /db/_revs_diff` (`{"id":{"missing":[…],"possible_ancestors":[…]}}`, fully present ids
    /// left out) and its older sibling `_missing_revs` (`{"missing_revs":{"id":[…]}}`).
    private func revsDiff(_ database: Database, _ request: Request, missingRevsStyle: Bool) throws -> Response {
        try request.requireJSONContent()
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        try Limits.checkBulkCount(body.count)
        var query: [(id: String, revs: [RevID])] = []
        for (id, value) in body {
            guard let array = value.arrayValue else {
                throw CouchError.badRequest("Each document id must map to an array of revs")
            }
            var revs: [RevID] = []
            for item in array {
                guard let text = item.stringValue else { throw CouchError.invalidRev }
                revs.append(try DocumentInput.parseRev(text))
            }
            query.append((id, revs))
        }
        // The drop credentials learn nothing of documents they did not write: no `possible_ancestors`, and other
        // ids answered from what they sent (`DropLedger.revsDiff`).
        let diff =
            try request.user.drop.map { drop in
                try drop.revsDiff(database, query).map {
                    (id: $0.id, missing: $0.missing, possibleAncestors: [RevID]())
                }
            } ?? database.revsDiff(query)
        var out = JSONObject()
        for entry in diff where !entry.missing.isEmpty {
            if missingRevsStyle {
                out[entry.id] = .array(entry.missing.map { .string($0.description) })
            } else {
                var item = JSONObject()
                item["missing"] = .array(entry.missing.map { .string($0.description) })
                if !entry.possibleAncestors.isEmpty {
                    item["possible_ancestors"] = .array(entry.possibleAncestors.map { .string($0.description) })
                }
                out[entry.id] = .object(item)
            }
        }
        return .json(.ok, missingRevsStyle ? ["missing_revs": .object(out)] : .object(out))
    }

    /// `POST /db/_bulk_get`: `{"results":[{"id","docs":[{"ok":doc}|{"error":{…}}]}]}` in request order.
    func bulkGet(_ c: RequestContext) throws -> Response {
        let (database, request) = (try c.database(), c.request)
        try request.requireJSONContent()
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        guard let docs = body["docs"]?.arrayValue else {
            throw CouchError.badRequest("Missing JSON list of 'docs'.")
        }
        try Limits.checkBulkCount(docs.count)
        var options = try RenderOptions(request.query)
        let latest = request.query.isExactlyTrue("latest") || body["latest"]?.boolValue == true
        if body["revs"]?.boolValue == true { options.revs = true }
        if body["attachments"]?.boolValue == true { options.attachments = true }
        // What each document asks; an empty id or a bad rev is answered without a lookup.
        let asks = docs.map { BulkGetAsk($0, options: options, latest: latest) }
        let queries = asks.compactMap { $0.query }
        // Streamed one result at a time, attachment data included, so `attachments=true` (what every
        // PouchDB pull sends) costs one document's JSON however large the attachments. The lookups are read a run
        // at a time, each run in one read transaction and bounded by its bodies' bytes.
        let inline = InlineAttachments(blobs, database)
        return .stream(.ok) { out in
            var answers: [RevisionAnswer] = []
            var nextAnswer = 0
            var nextQuery = 0
            try out.write("{\"results\":[")
            for (position, ask) in asks.enumerated() {
                if position > 0 { try out.write(",") }
                guard case .lookUp(let query, let revText, let docOptions) = ask else {
                    if case .answered(let result) = ask { try out.write(result.serialized()) }
                    continue
                }
                if nextAnswer == answers.count {
                    answers = try database.revisions(queries[nextQuery...], bodyBudget: Limits.bulkGetReadBytes)
                    nextAnswer = 0
                    nextQuery += answers.count
                }
                guard nextAnswer < answers.count else {
                    throw CouchError.internalError("_bulk_get: a lookup went unread")
                }
                let answer = answers[nextAnswer]
                nextAnswer += 1
                let entries: [JSON]
                do {
                    entries = try bulkGetEntries(query, revText, docOptions, answer, inline)
                } catch let error as CouchError {
                    // One document that cannot be rendered (an attachment's bytes gone, say) is its own error item.
                    entries = [bulkGetFailure(query.id, revText, error.error, error.reason)]
                }
                let result: JSON = ["id": .string(query.id), "docs": .array(entries)]
                try inline.write(result.serialized(), to: out)
            }
            try out.write("]}\n")
        }
    }

    /// One `_bulk_get` document's `docs`: each revision found, or its error (CouchDB's `not_found` / `missing`).
    private func bulkGetEntries(
        _ query: RevisionQuery, _ revText: String?, _ options: RenderOptions, _ answer: RevisionAnswer,
        _ inline: InlineAttachments
    ) throws -> [JSON] {
        guard let info = answer.info, !answer.revisions.isEmpty else {
            return [bulkGetFailure(query.id, revText ?? "undefined", "not_found", "missing")]
        }
        let renderer = DocumentRenderer(id: query.id, info: info, options: options, inline: inline)
        return try answer.revisions.map { rev, revision in
            guard let revision, revision.body != nil || revision.deleted else {
                return bulkGetFailure(query.id, rev.description, "not_found", "missing")
            }
            return ["ok": .object(try renderer.render(revision))]
        }
    }
}

/// What one `_bulk_get` document asks for: a lookup, or an answer known without one (a bad id or rev).
private enum BulkGetAsk {
    case lookUp(RevisionQuery, revText: String?, options: RenderOptions)
    case answered(JSON)

    init(_ spec: JSON, options: RenderOptions, latest: Bool) {
        guard let id = spec["id"]?.stringValue, !id.isEmpty else {
            // An empty id is echoed as CouchDB does; a missing or non-string one is null (CouchDB answers the whole
            // request 500 `function_clause` then).
            let echoed = spec["id"]?.stringValue
            self = .answered([
                "id": echoed.map(JSON.string) ?? .null,
                "docs": [bulkGetFailure(echoed, nil, "illegal_docid", "Document id must not be empty")],
            ])
            return
        }
        let revText = spec["rev"]?.stringValue
        var options = options
        if let since = spec["atts_since"], !since.isNull {
            options.attsSince = try? RenderOptions.revList(since)
        }
        do throws(CouchError) {
            let rev = try revText.map(DocumentInput.parseRev)
            self = .lookUp(RevisionQuery(id: id, rev: rev, latest: latest), revText: revText, options: options)
        } catch {
            self = .answered(["id": .string(id), "docs": [bulkGetFailure(id, revText, error.error, error.reason)]])
        }
    }

    package var query: RevisionQuery? {
        if case .lookUp(let query, _, _) = self { return query }
        return nil
    }
}

/// One error item of a `_bulk_get` result's `docs`.
private func bulkGetFailure(_ id: String?, _ rev: String?, _ error: String, _ reason: String) -> JSON {
    var err = JSONObject()
    err["id"] = id.map(JSON.string) ?? .null
    err["rev"] = rev.map(JSON.string) ?? .null
    err["error"] = .string(error)
    err["reason"] = .string(reason)
    return ["error": .object(err)]
}

extension ReplicationHandlers: RouteCollection {
    package var routes: [Route] {
        return [
            Route([.POST], "/{db}/_revs_diff", .member, drop: .ownDatabase, body: .bulk, revsDiff),
            Route([.POST], "/{db}/_missing_revs", .member, drop: .ownDatabase, body: .bulk, missingRevs),
            Route([.POST], "/{db}/_bulk_get", .member, body: .bulk, bulkGet),
        ]
    }
}
