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
/// - `_local` documents are the account's only when it created them (its own checkpoints): only those are read,
///   written or deleted; a write to someone else's (the owner's replication checkpoints) is answered as on an absent
///   one and stores nothing (`writeLocal`).
///
/// Ids are kept and compared as their UTF-8 bytes, never as `String`s: Swift's `String` equality is canonical
/// equivalence, under which `"\u{212A}ids-album"` (KELVIN SIGN) is `"Kids-album"` and an NFD `café` is the NFC one,
/// so a `Set<String>` took the owner's document for one the sender had created (issue 35).
///
/// It lives in memory with the account (it dies with the session) and is bounded (`Limits`): ids of at most
/// `idBytes` bytes (400 `illegal_docid` beyond, as CouchDB's `max_document_id_length`), at most `documents` ids
/// and `revsPerDocument` revs per shadowed id, and at most `heldBytes` of ids and revs in all; beyond that the
/// drop's writes are 403, checked before anything is stored.
package final class DropLedger: Sendable, Equatable {
    /// The ledger's bounds; the defaults hold a drop of 100,000 photos with ordinary ids in about 16 MiB.
    package struct Limits: Sendable {
        package var documents = 100_000
        package var revsPerDocument = 1_000
        /// The longest id the drop may write (CouchDB's `max_document_id_length`, which it leaves unbounded).
        package var idBytes = 1_024
        /// The most memory the ledger's ids and revs may take, as counted by `cost`.
        package var heldBytes = 16 << 20

        package init() {}
    }

    /// What one id is counted as in `heldBytes`: its bytes and the entry holding them.
    static func cost(ofID key: [UInt8]) -> Int { key.count &+ 64 }
    /// What one remembered rev of a shadowed id is counted as.
    static func cost(of rev: RevID) -> Int { rev.hash.utf8.count &+ 48 }

    private struct State {
        var created: Set<[UInt8]> = []
        var shadowed: [[UInt8]: Set<RevID>] = [:]
        var locals: Set<[UInt8]> = []
        /// What the ids and revs above take, by `cost`.
        var heldBytes = 0
        var chargedBytes = 0
        var refusedBytes = 0
        var count: Int { created.count + shadowed.count + locals.count }
    }

    private let state = Mutex(State())
    /// Serializes the existence check and the write of every drop write in the process, so that two senders
    /// racing for one id cannot both take it for absent and merge into each other's document.
    private static let gate = Mutex(())

    package let limits: Limits

    /// Whether the credentials are refused on plain HTTP (`receive` with TLS on: they travel only over HTTPS).
    package let httpsOnly: Bool

    /// The most bytes the credentials' uploads may send, and so store (`receive --max-size`).
    package let maxBytes: Int

    package init(httpsOnly: Bool = false, maxBytes: Int = .max, limits: Limits = Limits()) {
        self.httpsOnly = httpsOnly
        self.maxBytes = maxBytes
        self.limits = limits
    }

    /// How many documents the credentials created (what `GET /db` tells them, `DatabaseInfo.json(forDrop:)`).
    package var createdCount: Int { state.withLock { $0.created.count } }

    /// How many ids the ledger holds and the memory they take (by `cost`), for tests and the bound.
    package var held: (ids: Int, bytes: Int) {
        state.withLock { ($0.count, $0.heldBytes) }
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

    /// The key an id is kept and compared by: its bytes.
    /// - Throws: 400 `illegal_docid` for an id longer than `limits.idBytes`, before anything is written.
    private func key(_ docID: String) throws(CouchError) -> [UInt8] {
        guard docID.utf8.count <= limits.idBytes else { throw .illegalDocID("Document id is too long") }
        return Array(docID.utf8)
    }

    /// Throws unless `ids` more ids taking `bytes` more fit in the ledger.
    private func requireRoom(_ state: State, ids: Int, bytes: Int) throws(CouchError) {
        guard state.count &+ ids <= limits.documents, state.heldBytes &+ bytes <= limits.heldBytes else {
            throw DropLedger.full
        }
    }

    /// Applies `writes` for the account: its own documents and absent ids are written, other ids are shadowed.
    /// Room in the ledger for every id the batch adds is checked before any of it is written, so that a stored
    /// document is always one the account can go on updating.
    /// - Returns: One result per write, in order.
    func apply(_ database: Database, _ writes: [RevisionWrite], newEdits: Bool, abortOnInvalid: Bool) throws
        -> [WriteResult]
    {
        let keys = try writes.map { (write) throws(CouchError) in try key(write.docID) }
        return try DropLedger.gate.withLock { _ throws -> [WriteResult] in
            var results = [WriteResult?](repeating: nil, count: writes.count)
            var real: [RevisionWrite] = []
            var realIndex: [Int] = []
            var adding = Set<[UInt8]>()
            for (index, write) in writes.enumerated() {
                let (mine, known) = state.withLock { ($0.created.contains(keys[index]), $0.shadowed[keys[index]]) }
                let absent = mine || known != nil ? false : try database.document(write.docID) == nil
                if mine || absent {
                    real.append(write)
                    realIndex.append(index)
                    if absent { adding.insert(keys[index]) }
                } else {
                    results[index] = WriteResult(
                        docID: write.docID, result: try shadow(write, key: keys[index], newEdits: newEdits))
                }
            }
            let addedBytes = adding.reduce(0) { $0 &+ DropLedger.cost(ofID: $1) }
            try state.withLock { (state) throws(CouchError) in
                try requireRoom(state, ids: adding.count, bytes: addedBytes)
            }
            if !real.isEmpty {
                let outcomes =
                    newEdits
                    ? try database.applyEdits(real, abortOnInvalid: abortOnInvalid)
                    : try database.applyReplicated(real, abortOnInvalid: abortOnInvalid)
                for (offset, outcome) in outcomes.enumerated() where offset < realIndex.count {
                    results[realIndex[offset]] = outcome
                    guard case .success = outcome.result else { continue }
                    let key = keys[realIndex[offset]]
                    state.withLock { state in
                        // Room was checked above, under the gate that every change of the ledger's ids holds.
                        if state.created.insert(key).inserted { state.heldBytes &+= DropLedger.cost(ofID: key) }
                    }
                }
            }
            return results.enumerated().map { index, result in
                result ?? WriteResult(docID: writes[index].docID, result: .failure(.internalError("unwritten")))
            }
        }
    }

    /// The answer a write to an absent id would get, remembered instead of stored.
    private func shadow(_ write: RevisionWrite, key: [UInt8], newEdits: Bool) throws(CouchError) -> Result<
        RevID, StoreError
    > {
        try state.withLock { (state) throws(CouchError) -> Result<RevID, StoreError> in
            let known = state.shadowed[key]
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
            guard revs.count <= limits.revsPerDocument else { throw DropLedger.full }
            let oldBytes = known.map { $0.reduce(DropLedger.cost(ofID: key)) { $0 &+ DropLedger.cost(of: $1) } } ?? 0
            let newBytes = revs.reduce(DropLedger.cost(ofID: key)) { $0 &+ DropLedger.cost(of: $1) }
            try requireRoom(state, ids: known == nil ? 1 : 0, bytes: newBytes &- oldBytes)
            state.shadowed[key] = revs
            state.heldBytes &+= newBytes &- oldBytes
            return .success(rev)
        }
    }

    /// `_revs_diff` for the account: the revs of each id it lacks, from the store for its own documents and from
    /// what it sent for every other id; never `possible_ancestors`. Ids are matched by bytes.
    func revsDiff(_ database: Database, _ query: [(id: String, revs: [RevID])]) throws -> [(
        id: String, missing: [RevID]
    )] {
        let keyed = query.map { (key: Array($0.id.utf8), id: $0.id, revs: $0.revs) }
        let (own, shadowed) = state.withLock { state in
            (Set(keyed.map(\.key).filter { state.created.contains($0) }), state.shadowed)
        }
        var stored: [[UInt8]: [RevID]] = [:]
        if !own.isEmpty {
            let mine = keyed.filter { own.contains($0.key) }.map { (id: $0.id, revs: $0.revs) }
            for entry in try database.revsDiff(mine) {
                stored[Array(entry.id.utf8)] = entry.missing
            }
        }
        var out: [(id: String, missing: [RevID])] = []
        for entry in keyed {
            let missing: [RevID]
            if own.contains(entry.key) {
                missing = stored[entry.key] ?? []
            } else {
                let known = shadowed[entry.key] ?? []
                var seen = Set<RevID>()
                missing = entry.revs.filter { !known.contains($0) && seen.insert($0).inserted }
            }
            if !missing.isEmpty { out.append((entry.id, missing)) }
        }
        return out
    }

    /// Writes a `_local` document for the account, create-only as its documents are: one it created is written
    /// (`store`); an absent one is created and becomes the account's; one that exists and is not the account's (the
    /// owner's replication checkpoint, another sender's) is answered as `store` would answer on an absent one
    /// (`0-1`, `0-N+1` after `0-N`, `0-0` for a deletion: `_local` writes never conflict) and nothing is stored.
    /// - Parameters:
    ///   - deleted: The write is a deletion.
    ///   - previous: N of the `0-N` rev sent, if any.
    ///   - store: Stores the write and returns its rev.
    func writeLocal(
        _ database: Database, _ docID: String, deleted: Bool, previous: Int?, _ store: () throws -> String
    ) throws -> String {
        let key = try key(docID)
        return try DropLedger.gate.withLock { _ throws -> String in
            if state.withLock({ $0.locals.contains(key) }) { return try store() }
            guard try database.localDocument(docID) == nil else {
                return deleted ? "0-0" : "0-\((previous ?? 0) &+ 1)"
            }
            // Deleting an absent document stores nothing, and so claims nothing.
            guard !deleted else { return try store() }
            try state.withLock { (state) throws(CouchError) in
                try requireRoom(state, ids: 1, bytes: DropLedger.cost(ofID: key))
            }
            let rev = try store()
            state.withLock { state in
                if state.locals.insert(key).inserted { state.heldBytes &+= DropLedger.cost(ofID: key) }
            }
            return rev
        }
    }

    /// Whether the account created this `_local` document (its own checkpoint), by the id's bytes.
    func ownsLocal(_ docID: String) -> Bool {
        let key = Array(docID.utf8)
        return state.withLock { $0.locals.contains(key) }
    }
}
