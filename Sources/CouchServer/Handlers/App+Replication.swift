import CouchCrypto
import CouchWire
import RevTree

/// The endpoints replicators drive: `_bulk_docs`, `_revs_diff`, `_missing_revs`, `_bulk_get`.
extension App {
    /// `POST /db/_bulk_docs`. Always 201; per-document failures are array items
    /// (`{"id","rev"?,"error","reason"}`), never a failure of the whole request.
    func bulkDocs(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "POST")
        try requireJSONContent(request)
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        guard let docs = body["docs"]?.arrayValue else {
            throw CouchError.badRequest("POST body must include `docs` parameter.")
        }
        let newEdits = body["new_edits"]?.boolValue ?? true

        // Parse every document first; a bad one becomes its own error item.
        var results = [JSON?](repeating: nil, count: docs.count)
        var writes: [RevisionWrite] = []
        var writeIndex: [Int] = []
        for (index, doc) in docs.enumerated() {
            do {
                let input = try DocumentInput(doc, local: doc["_id"]?.stringValue?.hasBytePrefix("_local/") == true)
                let docID = input.id ?? Secrets.randomBytes(16).hexString
                try DocumentID.validate(docID)
                if docID.hasBytePrefix("_local/") {
                    let rev = try putLocal(database, docID, input: input)
                    results[index] = ["ok": true, "id": .string(docID), "rev": .string(rev)]
                    continue
                }
                writes.append(
                    try makeWrite(
                        database, docID: docID, input: input, base: input.rev, newEdits: newEdits, followed: nil))
                writeIndex.append(index)
            } catch let error as CouchError {
                var item = JSONObject()
                if let id = doc["_id"]?.stringValue { item["id"] = .string(id) }
                if let rev = doc["_rev"]?.stringValue { item["rev"] = .string(rev) }
                item["error"] = .string(error.error)
                item["reason"] = .string(error.reason)
                results[index] = .object(item)
            }
        }
        let outcomes = newEdits ? try database.applyEdits(writes) : try database.applyReplicated(writes)
        for (offset, outcome) in outcomes.enumerated() where offset < writeIndex.count {
            let index = writeIndex[offset]
            switch outcome.result {
            case .success(let rev):
                if newEdits {
                    results[index] = ["ok": true, "id": .string(outcome.docID), "rev": .string(rev.description)]
                }
            case .failure(let storeError):
                let error = CouchError(storeError)
                var item = JSONObject()
                item["id"] = .string(outcome.docID)
                if let rev = docs[index]["_rev"]?.stringValue { item["rev"] = .string(rev) }
                item["error"] = .string(error.error)
                item["reason"] = .string(error.reason)
                results[index] = .object(item)
            }
        }
        try reply.json(201, .array(results.compactMap { $0 }))
    }

    /// `POST /db/_revs_diff` (`{"id":{"missing":[…],"possible_ancestors":[…]}}`, fully present ids
    /// left out) and its older sibling `_missing_revs` (`{"missing_revs":{"id":[…]}}`).
    func revsDiff(_ database: Database, _ request: Request, _ reply: Reply, missingRevsStyle: Bool) throws {
        try require(request, "POST")
        try requireJSONContent(request)
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
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
        let diff = try database.revsDiff(query)
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
    func bulkGet(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "POST")
        try requireJSONContent(request)
        let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
        guard let docs = body["docs"]?.arrayValue else {
            throw CouchError.badRequest("Missing JSON list of 'docs'.")
        }
        var options = try RenderOptions(request.query)
        let latest = request.query.isExactlyTrue("latest") || body["latest"]?.boolValue == true
        if body["revs"]?.boolValue == true { options.revs = true }
        if body["attachments"]?.boolValue == true { options.attachments = true }
        let loader = attachmentLoader(database)
        var results: [JSON] = []
        results.reserveCapacity(docs.count)
        for spec in docs {
            let id = spec["id"]?.stringValue
            var entries: [JSON] = []
            func failure(_ rev: String?, _ error: String, _ reason: String) -> JSON {
                var err = JSONObject()
                err["id"] = id.map(JSON.string) ?? .null
                err["rev"] = rev.map(JSON.string) ?? .null
                err["error"] = .string(error)
                err["reason"] = .string(reason)
                return ["error": .object(err)]
            }
            guard let id, !id.isEmpty else {
                results.append(["id": .null, "docs": [failure(nil, "illegal_docid", "Document id must not be empty")]])
                continue
            }
            var docOptions = options
            if let since = spec["atts_since"], !since.isNull {
                docOptions.attsSince = try? RenderOptions.revList(since)
            }
            do {
                let info = try database.document(id)
                var targets: [RevID] = []
                if let revText = spec["rev"]?.stringValue {
                    let rev = try DocumentInput.parseRev(revText)
                    targets = [rev]
                    if latest, let info {
                        let leaves = info.tree.leaves(descendingFrom: rev)
                        if !leaves.isEmpty { targets = leaves }
                    }
                } else if let info {
                    targets = [info.winner]
                }
                if info == nil || targets.isEmpty {
                    entries.append(failure(spec["rev"]?.stringValue ?? "undefined", "not_found", "missing"))
                }
                let renderer = DocumentRenderer(id: id, info: info, options: docOptions, loadAttachment: loader)
                for rev in targets where info != nil {
                    if let revision = try database.revision(id, rev: rev), revision.body != nil || revision.deleted {
                        entries.append(["ok": .object(try renderer.render(revision))])
                    } else {
                        entries.append(failure(rev.description, "not_found", "missing"))
                    }
                }
            } catch let error as CouchError {
                entries.append(failure(spec["rev"]?.stringValue, error.error, error.reason))
            }
            results.append(["id": .string(id), "docs": .array(entries)])
        }
        try reply.json(200, ["results": .array(results)])
    }

    /// CouchDB answers 415 to JSON endpoints given another content type.
    func requireJSONContent(_ request: Request) throws(CouchError) {
        if let type = request.contentType, type != "application/json" {
            throw .badContentType("Content-Type must be application/json")
        }
    }
}
