import CouchStore
import CouchWire
import RevTree
import Synchronization

/// What one set of `couchlite receive`'s drop credentials has written, so that a drop stays create-only: a
/// revision may be written only to a document these credentials created, and what belongs to other senders is
/// answered as if it were absent.
///
/// - A write to an id that does not exist creates it and the id becomes the account's.
/// - A write to an id that exists and is not the account's (another sender's photo, a document of the database's
///   owner) is answered exactly as it would be if the id were absent, and nothing is stored: `_bulk_docs` and
///   `PUT ?new_edits=false` succeed with the rev sent; a `PUT` without a rev succeeds with the rev the store would
///   have given a new document; a `PUT` with a rev (a deletion included) is 409, as on a missing document. The revs
///   so acknowledged are remembered ("shadowed"), so that `_revs_diff` then answers consistently.
/// - `_revs_diff` / `_missing_revs` answer the account's own documents from the store and every other id from what
///   the account sent (all missing, but what was acknowledged), never with `possible_ancestors`.
/// - `_local` documents are readable only when the account wrote them (its own checkpoints).
///
/// It lives in memory with the account (it dies with the session) and is bounded: `maxDocuments` ids and
/// `maxRevsPerDocument` revs per shadowed id; beyond that the drop's writes are 403.
package final class DropLedger: Sendable, Equatable {
    package static let maxDocuments = 100_000
    package static let maxRevsPerDocument = 1_000

    private struct State {
        var created: Set<String> = []
        var shadowed: [String: Set<RevID>] = [:]
        var locals: Set<String> = []
        var chargedBytes = 0
        var refusedBytes = 0
        var count: Int { created.count + shadowed.count + locals.count }
    }

    private let state = Mutex(State())
    /// Serializes the existence check and the write of every drop write in the process, so that two senders
    /// racing for one id cannot both take it for absent and merge into each other's document.
    private static let gate = Mutex(())

    /// Whether the credentials are refused on plain HTTP (`receive` with TLS on: they travel only over HTTPS).
    package let httpsOnly: Bool

    /// The most bytes the credentials' uploads may send, and so store (`receive --max-size`).
    package let maxBytes: Int

    package init(httpsOnly: Bool = false, maxBytes: Int = .max) {
        self.httpsOnly = httpsOnly
        self.maxBytes = maxBytes
    }

    /// Bytes the credentials' uploads have sent (charged against `maxBytes`), and bytes refused (507).
    package var bytes: (charged: Int, refused: Int) {
        state.withLock { ($0.chargedBytes, $0.refusedBytes) }
    }

    /// The least a chunked upload may send while at least that much is left: one photo or short video, whatever
    /// else is being sent at the same time.
    static let chunkedSliceBytes = 256 * 1024 * 1024

    /// Charges an upload's body before any of it is read: its Content-Length, or for a chunked body (nil) all
    /// that is left. What a drop stores is never more than what its uploads sent (blobs, bodies), so this bounds
    /// the disk it takes, refused writes included.
    /// - Returns: The bytes charged (to refund what is not read), nil when the body does not fit (507).
    func reserve(declared: Int?) -> Int? {
        state.withLock { state in
            let remaining = max(0, maxBytes &- state.chargedBytes)
            guard let declared else {
                // A chunked body declares no size: it may send a slice of what is left (the replicator streams
                // several attachments at once, each chunked), and is given back what it did not send.
                guard remaining > 0 else { return nil }
                let slice = min(remaining, max(remaining / 8, DropLedger.chunkedSliceBytes))
                state.chargedBytes &+= slice
                return slice
            }
            guard declared <= remaining else {
                state.refusedBytes &+= declared
                return nil
            }
            state.chargedBytes &+= declared
            return declared
        }
    }

    /// Gives back charged bytes that were never read.
    func refund(_ bytes: Int) {
        guard bytes > 0 else { return }
        state.withLock { $0.chargedBytes = max(0, $0.chargedBytes &- bytes) }
    }

    package static func == (lhs: DropLedger, rhs: DropLedger) -> Bool { lhs === rhs }

    private static var full: CouchError { .forbidden("This drop has reached its limit of documents.") }

    /// Applies `writes` for the account: its own documents and absent ids are written, other ids are shadowed.
    /// - Returns: One result per write, in order.
    func apply(_ database: Database, _ writes: [RevisionWrite], newEdits: Bool, abortOnInvalid: Bool) throws
        -> [WriteResult]
    {
        try DropLedger.gate.withLock { _ throws -> [WriteResult] in
            var results = [WriteResult?](repeating: nil, count: writes.count)
            var real: [RevisionWrite] = []
            var realIndex: [Int] = []
            for (index, write) in writes.enumerated() {
                let mine = state.withLock { $0.created.contains(write.docID) }
                let absent = mine ? false : try database.document(write.docID) == nil
                if mine || absent {
                    real.append(write)
                    realIndex.append(index)
                } else {
                    results[index] = WriteResult(docID: write.docID, result: try shadow(write, newEdits: newEdits))
                }
            }
            if !real.isEmpty {
                let outcomes =
                    newEdits
                    ? try database.applyEdits(real, abortOnInvalid: abortOnInvalid)
                    : try database.applyReplicated(real, abortOnInvalid: abortOnInvalid)
                for (offset, outcome) in outcomes.enumerated() where offset < realIndex.count {
                    results[realIndex[offset]] = outcome
                    guard case .success = outcome.result else { continue }
                    try state.withLock { (state) throws(CouchError) in
                        if state.created.contains(outcome.docID) { return }
                        guard state.count < DropLedger.maxDocuments else { throw DropLedger.full }
                        state.created.insert(outcome.docID)
                    }
                }
            }
            return results.enumerated().map { index, result in
                result ?? WriteResult(docID: writes[index].docID, result: .failure(.internalError("unwritten")))
            }
        }
    }

    /// The answer a write to an absent id would get, remembered instead of stored.
    private func shadow(_ write: RevisionWrite, newEdits: Bool) throws(CouchError) -> Result<RevID, StoreError> {
        try state.withLock { (state) throws(CouchError) -> Result<RevID, StoreError> in
            let known = state.shadowed[write.docID]
            if known == nil, state.count >= DropLedger.maxDocuments { throw DropLedger.full }
            var revs = known ?? []
            let rev: RevID
            if !newEdits {
                guard let leaf = write.path.first else { return .failure(.invalidRev) }
                revs.formUnion(write.path)
                rev = leaf
            } else {
                let parent: RevID?
                if let base = write.path.first {
                    // A rev on a missing document is a conflict; on one the account was answered for, an edit.
                    guard revs.contains(base) else { return .failure(.conflict) }
                    parent = base
                } else {
                    guard revs.isEmpty else { return .failure(.conflict) }
                    parent = nil
                }
                let digests: [RevisionHash.Attachment] = write.attachments.compactMap {
                    guard case .stored(let info) = $0 else { return nil }
                    return .init(name: info.name, contentType: info.contentType, digest: info.digest)
                }
                rev = RevID(
                    pos: (parent?.pos ?? 0) + 1,
                    hash: RevisionHash.compute(
                        parent: parent, deleted: write.deleted, body: write.body, attachments: digests))
                revs.insert(rev)
            }
            guard revs.count <= DropLedger.maxRevsPerDocument else { throw DropLedger.full }
            state.shadowed[write.docID] = revs
            return .success(rev)
        }
    }

    /// `_revs_diff` for the account: the revs of each id it lacks, from the store for its own documents and from
    /// what it sent for every other id; never `possible_ancestors`.
    func revsDiff(_ database: Database, _ query: [(id: String, revs: [RevID])]) throws -> [(
        id: String, missing: [RevID]
    )] {
        let (created, shadowed) = state.withLock { state in
            (query.filter { state.created.contains($0.id) }.map(\.id), state.shadowed)
        }
        let own = Set(created)
        var stored: [String: [RevID]] = [:]
        if !own.isEmpty {
            for entry in try database.revsDiff(query.filter { own.contains($0.id) }) {
                stored[entry.id] = entry.missing
            }
        }
        var out: [(id: String, missing: [RevID])] = []
        for (id, revs) in query {
            let missing: [RevID]
            if own.contains(id) {
                missing = stored[id] ?? []
            } else {
                let known = shadowed[id] ?? []
                var seen = Set<RevID>()
                missing = revs.filter { !known.contains($0) && seen.insert($0).inserted }
            }
            if !missing.isEmpty { out.append((id, missing)) }
        }
        return out
    }

    /// Records a `_local` document the account wrote.
    func wroteLocal(_ docID: String) throws(CouchError) {
        try state.withLock { (state) throws(CouchError) in
            if state.locals.contains(docID) { return }
            guard state.count < DropLedger.maxDocuments else { throw DropLedger.full }
            state.locals.insert(docID)
        }
    }

    /// Whether the account wrote this `_local` document (its own checkpoint).
    func wroteLocal(contains docID: String) -> Bool {
        state.withLock { $0.locals.contains(docID) }
    }
}
