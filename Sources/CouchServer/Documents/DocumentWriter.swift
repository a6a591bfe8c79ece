import CouchStore
import CouchWire
import QueryServer
import RevTree

/// The one way documents are written, shared by every route that stores them (single documents, `_bulk_docs`,
/// attachments, COPY, form uploads, `_users`, the gallery's upload): attachment bytes become blobs, design documents
/// are their database admins' to write, every normal document passes the database's `validate_doc_update`
/// functions, and the store applies what passed.
package struct DocumentWriter: Sendable {
    let blobs: BlobRegistry
    package let security: SecurityStore
    let designFunctions: DesignFunctionCache
    let queryServer: QueryServer

    /// Writes one document revision and returns its rev, or throws its error.
    package func writeOne(
        _ database: Database, docID: String, input: DocumentInput, base: RevID?, newEdits: Bool,
        followed: FollowedAttachments?, user: UserContext
    ) throws -> RevID {
        let write = try makeWrite(
            database, docID: docID, input: input, base: base, newEdits: newEdits, followed: followed, user: user)
        let result =
            newEdits ? try applyEdit(database, write, user: user) : try applyReplicated(database, write, user: user)
        switch result.result {
        case .success(let rev): return rev
        case .failure(let error): throw CouchError(error, docID: docID)
        }
    }

    /// Turns a parsed document into a store write, ingesting any attachment data it carries.
    func makeWrite(
        _ database: Database, docID: String, input: DocumentInput, base: RevID?, newEdits: Bool,
        followed: FollowedAttachments?, user: UserContext
    ) throws -> RevisionWrite {
        // Members may write normal documents; design documents are the database admins'.
        try requireDesignWriteAccess(database, docID: docID, user)
        let path: [RevID]
        if newEdits {
            path = base.map { [$0] } ?? []
        } else {
            path = try input.replicatedPath()
        }
        let newPos = newEdits ? (base?.pos ?? 0) + 1 : (path.first?.pos ?? 1)
        let attachments = try ingestAttachments(
            database, input.attachments, newRevPos: newPos, replicated: !newEdits, followed: followed)
        let body = input.bodyBytes
        guard body.count <= Limits.documentBytes else {
            throw CouchError.documentTooLarge(docID)
        }
        return RevisionWrite(docID: docID, path: path, deleted: input.deleted, body: body, attachments: attachments)
    }

    /// Stores a local document's fields and returns its new `0-N` rev. The drop credentials write only the `_local`
    /// documents they created (`DropLedger.writeLocal`): the owner's replication checkpoints are never theirs.
    func putLocal(_ database: Database, _ docID: String, input: DocumentInput, user: UserContext) throws -> String {
        // For the `_local` documents of a `_bulk_docs` (`PUT /db/_local/id` was refused by its row already).
        try RequestAuthorizer.requireUnreservedLocal(docID, user.scope)
        // `0-N` as sent; the store answers N + 1 without a conflict check, as CouchDB does.
        let previous: Int?
        if !input.deleted, let rev = input.rev {
            guard rev.pos == 0, let n = Int(rev.hash), n >= 0 else { throw CouchError.invalidRev }
            previous = n
        } else {
            previous = nil
        }
        let store = { () throws -> String in
            if input.deleted {
                _ = try database.deleteLocal(docID)
                return "0-0"
            }
            return "0-\(try database.putLocal(docID, body: input.bodyBytes, rev: previous))"
        }
        guard let drop = user.drop else { return try store() }
        return try drop.writeLocal(database, docID, deleted: input.deleted, previous: previous, store)
    }

    /// Writes a new revision on `base` with the same body and edited attachments.
    func rewriteAttachments(
        _ database: Database, _ docID: String, base: RevID?, user: UserContext,
        edit: (inout [AttachmentInfo]) throws(CouchError) -> Void
    ) throws -> RevID {
        var body: [UInt8] = Array("{}".utf8)
        var atts: [AttachmentInfo] = []
        if let base {
            guard let revision = try database.revision(docID, rev: base) else {
                // CouchDB: a rev that is not a leaf (or unknown) on an attachment update is a conflict.
                throw CouchError.conflict
            }
            body = revision.body ?? body
            atts = revision.attachments
        } else if let info = try database.document(docID), !info.deleted {
            throw CouchError.conflict
        }
        let kept = atts
        try edit(&atts)
        // Unchanged attachments go as stubs so that they keep their revpos (new ones get the new one).
        let refs: [AttachmentRef] = atts.map { att in
            kept.contains(att) ? .stub(name: att.name, revpos: att.revpos, digest: att.digest) : .stored(att)
        }
        let write = RevisionWrite(
            docID: docID, path: base.map { [$0] } ?? [], deleted: false, body: body, attachments: refs)
        let outcome = try applyEdit(database, write, user: user)
        switch outcome.result {
        case .success(let rev): return rev
        case .failure(let error): throw CouchError(error)
        }
    }

    /// Throws unless `user` may write this design document: plain members may write normal documents only.
    func requireDesignWriteAccess(_ database: Database, docID: String, _ user: UserContext) throws(CouchError) {
        guard docID.hasBytePrefix("_design/") else { return }
        guard security.security(of: database.name).isAdmin(user) else {
            throw RequestAuthorizer.securityError(user, "You are not a db or server admin.")
        }
    }
}
