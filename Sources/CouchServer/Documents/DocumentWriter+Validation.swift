import CouchStore
import CouchWire
import QueryServer
import RevTree

/// `validate_doc_update`: every design document's validation function runs on every write of a normal document,
/// on every write path (they all pass through `validateWrites` before the store applies them), for admins too,
/// as in CouchDB. Design documents (admin-only) and `_local` documents are not validated. `_replicator` documents
/// are also checked as replications (`ReplicatorDocumentCheck`).
extension DocumentWriter {
    /// Checks `writes` against the database's validation functions.
    /// - Returns: for each write, nil when it may be stored, or the error that refuses it (403 `forbidden`,
    ///   401 `unauthorized`, or the function's own 500).
    /// - Throws: when the functions could not run at all (a worker timed out, a function does not compile).
    func validateWrites(
        _ database: Database, _ writes: [RevisionWrite], newEdits: Bool, user: UserContext
    ) throws -> [CouchError?] {
        var verdicts = [CouchError?](repeating: nil, count: writes.count)
        guard !writes.isEmpty else { return verdicts }
        if database.name == ReplicatorDatabase.name && newEdits && user.handler != UserContext.localReplicator.handler {
            verdicts = writes.map(ReplicatorDocumentCheck.refusal)
        }
        let validators = try designFunctions.validators(database)
        guard !validators.isEmpty else { return verdicts }
        var items: [ValidationItem] = []
        var itemIndex: [Int] = []
        for (index, write) in writes.enumerated()
        where !write.docID.hasBytePrefix("_design/") && !write.docID.hasBytePrefix("_local/") {
            items.append(
                ValidationItem(
                    newDoc: DocumentWriter.validationDocument(write),
                    oldDoc: try previousDocument(database, write, newEdits: newEdits)))
            itemIndex.append(index)
        }
        guard !items.isEmpty else { return verdicts }
        let secObj = JSON.object(security.security(of: database.name).json)
        let outcomes: [ValidationOutcome]
        do {
            outcomes = try queryServer.validate(
                validators, items: items, userCtx: user.designJSON(database: database.name), secObj: secObj)
        } catch {
            throw CouchError(error)
        }
        for (offset, outcome) in outcomes.enumerated() where offset < itemIndex.count {
            switch outcome {
            case .allowed: continue
            case .forbidden(let reason): verdicts[itemIndex[offset]] = .forbidden(reason)
            case .unauthorized(let reason): verdicts[itemIndex[offset]] = .unauthorized(reason)
            case .failed(let error, let reason):
                verdicts[itemIndex[offset]] = .designFunction(status: 500, error: error, reason: reason)
            }
        }
        return verdicts
    }

    /// Validates one write; throws its refusal.
    func validateWrite(_ database: Database, _ write: RevisionWrite, newEdits: Bool, user: UserContext) throws {
        if let refusal = try validateWrites(database, [write], newEdits: newEdits, user: user).first ?? nil {
            throw refusal
        }
    }

    /// `newDoc` as CouchDB passes it: `_id`, `_rev` and `_revisions` from the write's path (for an edit, the
    /// revision it extends: the new rev id is made after validation), the fields, `_deleted`, attachment stubs.
    static func validationDocument(_ write: RevisionWrite) -> JSON {
        var doc = JSONObject()
        doc["_id"] = .string(write.docID)
        if let first = write.path.first { doc["_rev"] = .string(first.description) }
        if case .object(let fields)? = try? JSON.parse(write.body) {
            for (key, value) in fields { doc[key] = value }
        }
        if write.deleted { doc["_deleted"] = true }
        if let first = write.path.first {
            doc["_revisions"] = .object(
                JSONObject([("start", .int(first.pos)), ("ids", .array(write.path.map { .string($0.hash) }))]))
        }
        if !write.attachments.isEmpty {
            var attachments = JSONObject()
            for attachment in write.attachments {
                var stub = JSONObject()
                switch attachment {
                case .stored(let info):
                    stub["content_type"] = .string(info.contentType)
                    stub["revpos"] = .int(info.revpos)
                    stub["digest"] = .string(info.digest)
                    stub["length"] = .int(info.length)
                case .stub(_, let revpos, let digest):
                    if let revpos { stub["revpos"] = .int(revpos) }
                    if let digest { stub["digest"] = .string(digest) }
                }
                stub["stub"] = true
                attachments[attachment.name] = .object(stub)
            }
            doc["_attachments"] = .object(attachments)
        }
        return .object(doc)
    }

    /// `oldDoc`: the stored revision the write replaces. For an edit, its base (or, creating over a deleted
    /// document, the deleted winner); for a replicated write, the newest revision of its path already stored,
    /// as `couch_db:prep_and_validate_replicated_updates` finds it; nil for a new document.
    private func previousDocument(_ database: Database, _ write: RevisionWrite, newEdits: Bool) throws -> JSON? {
        var candidates: [RevID]
        if !newEdits {
            candidates = Array(write.path.dropFirst())
        } else if let base = write.path.first {
            candidates = [base]
        } else if let info = try database.document(write.docID) {
            candidates = [info.winner]
        } else {
            return nil
        }
        for rev in candidates {
            guard let revision = try database.revision(write.docID, rev: rev) else { continue }
            var doc = try DocumentRenderer(id: write.docID, info: nil, options: RenderOptions(), inline: nil)
                .render(revision)
            doc["_revisions"] = .object(
                JSONObject([
                    ("start", .int(revision.rev.pos)), ("ids", .array(revision.history.map { .string($0.hash) })),
                ]))
            return .object(doc)
        }
        return nil
    }
}

extension DocumentWriter {
    /// `database.applyEdits` for the single-document write paths (PUT, POST, DELETE, COPY, attachment PUT and
    /// DELETE, multipart, the gallery's upload): validated first, the refusal thrown.
    package func applyEdit(_ database: Database, _ write: RevisionWrite, user: UserContext) throws -> WriteResult {
        try applyOne(database, write, newEdits: true, user: user)
    }

    /// `database.applyReplicated` for a single replicated write (`PUT ?new_edits=false`), validated first.
    package func applyReplicated(_ database: Database, _ write: RevisionWrite, user: UserContext) throws
        -> WriteResult
    {
        try applyOne(database, write, newEdits: false, user: user)
    }

    private func applyOne(_ database: Database, _ write: RevisionWrite, newEdits: Bool, user: UserContext) throws
        -> WriteResult
    {
        try validateWrite(database, write, newEdits: newEdits, user: user)
        let results =
            if let drop = user.drop {
                try drop.apply(database, [write], newEdits: newEdits, abortOnInvalid: false)
            } else {
                newEdits ? try database.applyEdits([write]) : try database.applyReplicated([write])
            }
        return try DocumentWriter.only(results)
    }

    /// The one result of a one-write batch (the store answers each write it is given).
    private static func only(_ results: [WriteResult]) throws(CouchError) -> WriteResult {
        guard let result = results.first else { throw .unknownError("store returned no result") }
        return result
    }
}
