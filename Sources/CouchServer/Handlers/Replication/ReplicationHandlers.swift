import CouchCrypto
import CouchStore
import CouchWire
import RevTree

/// The endpoints replicators drive: `_bulk_docs`, `_revs_diff`, `_missing_revs`, `_bulk_get` (the replication
/// protocol; the jobs that run replications are `ReplicationJobHandlers`).
struct ReplicationHandlers: Sendable {
    let documents: DocumentWriter
    let blobs: BlobRegistry

    /// `POST /db/_bulk_docs`.
    func bulkDocs(_ c: RequestContext) throws { try bulkDocs(c.database(), c.request, c.reply) }

    /// `POST /db/_revs_diff`.
    func revsDiff(_ c: RequestContext) throws {
        try revsDiff(c.database(), c.request, c.reply, missingRevsStyle: false)
    }

    /// `POST /db/_missing_revs`.
    func missingRevs(_ c: RequestContext) throws {
        try revsDiff(c.database(), c.request, c.reply, missingRevsStyle: true)
    }

    /// `POST /db/_bulk_get`.
    func bulkGet(_ c: RequestContext) throws { try bulkGet(c.database(), c.request, c.reply) }
}

extension ReplicationHandlers {
    /// `POST /db/_bulk_docs`, checked as CouchDB checks it: every document is validated before any is written, and
    /// a bad one (an illegal id, a malformed `_rev`, a replicated document without a rev, a stub that names no
    /// stored attachment, …) fails the whole request with its error, writing nothing (`chttpd_db` validates the
    /// list, then `couch_db` aborts the update). Only conflicts and forbidden writes are per-document items
    /// (`{"id","error","reason"}`, no `rev`); `all_or_nothing: true` is 417, as CouchDB 3 does not support it.
    private func bulkDocs(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try request.requireJSONContent()
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        guard let docs = body["docs"]?.arrayValue else {
            throw CouchError.badRequest("POST body must include `docs` parameter.")
        }
        try Limits.checkBulkCount(docs.count)
        let newEdits: Bool
        switch body["new_edits"] {
        case nil: newEdits = true
        case .bool(let flag)?: newEdits = flag
        default: throw CouchError.badRequest("`new_edits` parameter must be a boolean.")
        }

        // Every document is checked before anything is stored.
        var inputs: [(docID: String, input: DocumentInput)] = []
        inputs.reserveCapacity(docs.count)
        for doc in docs {
            let input = try DocumentInput(doc, local: doc["_id"]?.stringValue?.hasBytePrefix("_local/") == true)
            let docID = input.id ?? Secrets.randomBytes(16).hexString
            try DocumentID.validate(docID)
            if !newEdits, !docID.hasBytePrefix("_local/"), input.rev == nil, input.revisions == nil {
                throw CouchError.badRequest(
                    "When `new_edits: false`, the document needs `_rev` or `_revisions` specified")
            }
            for name in input.attachments?.keys ?? [] { try DocumentWriter.validateAttachmentName(name) }
            inputs.append((docID, input))
        }
        if newEdits, body["all_or_nothing"]?.boolValue == true, !inputs.isEmpty {
            // `fabric_doc_update:validate_atomic_update`: one `not_implemented` item per document, nothing written.
            let items: [JSON] = inputs.map { entry in
                let rev = entry.input.rev?.description ?? "0-"
                return [
                    "id": .string(entry.docID), "rev": .string(rev), "error": "not_implemented",
                    "reason": "all_or_nothing is not supported",
                ]
            }
            return try reply.json(417, .array(items))
        }

        var results = [JSON?](repeating: nil, count: docs.count)
        var writes: [RevisionWrite] = []
        var writeIndex: [Int] = []
        var locals: [(index: Int, docID: String, input: DocumentInput)] = []
        for (index, entry) in inputs.enumerated() {
            if entry.docID.hasBytePrefix("_local/") {
                locals.append((index, entry.docID, entry.input))
                continue
            }
            do {
                writes.append(
                    try documents.makeWrite(
                        database, docID: entry.docID, input: entry.input, base: entry.input.rev, newEdits: newEdits,
                        followed: nil, user: request.user))
                writeIndex.append(index)
            } catch let error as CouchError where [401, 403].contains(error.status) {
                // A refused write is the document's own item, as a validation function's verdict is in CouchDB.
                results[index] = ReplicationHandlers.bulkItem(entry.docID, error)
            }
        }
        // `validate_doc_update` verdicts are per document too (CouchDB's replicated items also name the rev).
        let verdicts = try documents.validateWrites(database, writes, newEdits: newEdits, user: request.user)
        if verdicts.contains(where: { $0 != nil }) {
            var keptWrites: [RevisionWrite] = []
            var keptIndex: [Int] = []
            for (offset, verdict) in verdicts.enumerated() {
                guard let verdict else {
                    keptWrites.append(writes[offset])
                    keptIndex.append(writeIndex[offset])
                    continue
                }
                let write = writes[offset]
                results[writeIndex[offset]] = ReplicationHandlers.bulkItem(
                    write.docID, verdict, rev: newEdits ? nil : write.path.first?.description)
            }
            writes = keptWrites
            writeIndex = keptIndex
        }
        let outcomes: [WriteResult]
        do {
            if let drop = request.user.drop {
                // A drop is create-only: other senders' documents are answered as if absent (`DropLedger`).
                outcomes = try drop.apply(database, writes, newEdits: newEdits, abortOnInvalid: true)
            } else {
                outcomes =
                    newEdits
                    ? try database.applyEdits(writes, abortOnInvalid: true)
                    : try database.applyReplicated(writes, abortOnInvalid: true)
            }
        } catch let abort as BatchAborted {
            throw CouchError(abort.error, docID: abort.docID)
        }
        for (offset, outcome) in outcomes.enumerated() where offset < writeIndex.count {
            let index = writeIndex[offset]
            switch outcome.result {
            case .success(let rev):
                if newEdits {
                    results[index] = ["ok": true, "id": .string(outcome.docID), "rev": .string(rev.description)]
                }
            case .failure(let storeError):
                results[index] = ReplicationHandlers.bulkItem(
                    outcome.docID, CouchError(storeError, docID: outcome.docID))
            }
        }
        for local in locals {
            do {
                let rev = try documents.putLocal(database, local.docID, input: local.input, user: request.user)
                results[local.index] = ["ok": true, "id": .string(local.docID), "rev": .string(rev)]
            } catch let error as CouchError where [401, 403].contains(error.status) {
                // Forbidden, as a refused document is: its own item, the rest of the batch still written.
                results[local.index] = ReplicationHandlers.bulkItem(local.docID, error)
            }
        }
        try reply.json(201, .array(results.compactMap { $0 }))
    }

    /// A per-document `_bulk_docs` failure: `{"id","error","reason"}` (`chttpd_db:update_doc_result_to_json`).
    static func bulkItem(_ docID: String, _ error: CouchError, rev: String? = nil) -> JSON {
        guard let rev else {
            return ["id": .string(docID), "error": .string(error.error), "reason": .string(error.reason)]
        }
        return [
            "id": .string(docID), "rev": .string(rev), "error": .string(error.error), "reason": .string(error.reason),
        ]
    }

    /// `POST /db/_revs_diff` (`{"id":{"missing":[…],"possible_ancestors":[…]}}`, fully present ids
    /// left out) and its older sibling `_missing_revs` (`{"missing_revs":{"id":[…]}}`).
    private func revsDiff(_ database: Database, _ request: Request, _ reply: Reply, missingRevsStyle: Bool) throws {
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
        try reply.json(200, missingRevsStyle ? ["missing_revs": .object(out)] : .object(out))
    }

    /// `POST /db/_bulk_get`: `{"results":[{"id","docs":[{"ok":doc}|{"error":{…}}]}]}` in request order.
    private func bulkGet(_ database: Database, _ request: Request, _ reply: Reply) throws {
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
        var answers: [RevisionAnswer] = []
        var nextAnswer = 0
        var nextQuery = 0
        try reply.begin(200)
        try reply.write("{\"results\":[")
        for (position, ask) in asks.enumerated() {
            if position > 0 { try reply.write(",") }
            guard case .lookUp(let query, let revText, let docOptions) = ask else {
                if case .answered(let result) = ask { try reply.write(result.serialized()) }
                continue
            }
            if nextAnswer == answers.count {
                answers = try database.revisions(queries[nextQuery...], bodyBudget: Limits.bulkGetReadBytes)
                nextAnswer = 0
                nextQuery += answers.count
            }
            guard nextAnswer < answers.count else { throw CouchError.internalError("_bulk_get: a lookup went unread") }
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
            try inline.write(result.serialized(), to: reply)
        }
        try reply.write("]}\n")
        try reply.finish()
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
