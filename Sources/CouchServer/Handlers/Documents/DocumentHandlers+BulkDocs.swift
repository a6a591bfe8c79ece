import CouchCrypto
import CouchStore
import CouchWire
import RevTree

extension DocumentHandlers {
    /// `POST /db/_bulk_docs`, checked as CouchDB checks it: every document is validated before any is written, and
    /// a bad one (an illegal id, a malformed `_rev`, a replicated document without a rev, a stub that names no
    /// stored attachment, …) fails the whole request with its error, writing nothing (`chttpd_db` validates the
    /// list, then `couch_db` aborts the update). Only conflicts and forbidden writes are per-document items
    /// (`{"id","error","reason"}`, no `rev`); `all_or_nothing: true` is 417, as CouchDB 3 does not support it.
    func bulkDocs(_ c: RequestContext) throws -> Response {
        let (database, request) = (try c.database(), c.request)
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
            return .json(.expectationFailed, .array(items))
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
                results[index] = DocumentHandlers.bulkItem(entry.docID, error)
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
                results[writeIndex[offset]] = DocumentHandlers.bulkItem(
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
                results[index] = DocumentHandlers.bulkItem(
                    outcome.docID, CouchError(storeError, docID: outcome.docID))
            }
        }
        for local in locals {
            do {
                let rev = try documents.putLocal(database, local.docID, input: local.input, user: request.user)
                results[local.index] = ["ok": true, "id": .string(local.docID), "rev": .string(rev)]
            } catch let error as CouchError where [401, 403].contains(error.status) {
                // Forbidden, as a refused document is: its own item, the rest of the batch still written.
                results[local.index] = DocumentHandlers.bulkItem(local.docID, error)
            }
        }
        return .json(.created, .array(results.compactMap { $0 }))
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
}
