import RevTree

/// `GET /db` facts.
public struct DatabaseInfo: Sendable, Equatable {
    public var name: String
    /// Documents whose winner is live.
    public var docCount: Int
    /// Documents whose winner is deleted.
    public var docDelCount: Int
    public var updateSeq: Int
    public var purgeSeq: Int
    /// Bytes on disk (database file plus WAL).
    public var fileSize: Int
    /// Bytes of pages in use.
    public var activeSize: Int
    /// Bytes of stored bodies (uncompressed user data).
    public var externalSize: Int
    public var revsLimit: Int
}

/// One `_changes` row: a document at its latest update.
public struct ChangeRow: Sendable {
    public var seq: Int
    public var id: String
    /// The winner is deleted.
    public var deleted: Bool
    public var winner: RevID
    /// Every leaf, winner first (`style=all_docs`).
    public var leaves: [(rev: RevID, deleted: Bool)]
}

/// One stored revision with its body.
public struct StoredRevision: Sendable {
    public var rev: RevID
    public var deleted: Bool
    /// nil when missing (an ancestor known by id only, or compacted).
    public var body: [UInt8]?
    public var attachments: [AttachmentInfo]
    /// `rev` first, back to the oldest stored ancestor (`_revisions`).
    public var history: [RevID]
    /// The update sequence at which this revision was stored (`_local_seq`); 0 if it was only ever an ancestor.
    public var localSeq: Int
}

/// A document's tree and winner.
public struct DocumentInfo: Sendable {
    public var id: String
    /// Sequence of the latest update.
    public var seq: Int
    public var winner: RevID
    /// The winner is deleted.
    public var deleted: Bool
    /// Every leaf, winner first.
    public var leaves: [(rev: RevID, deleted: Bool)]
    public var tree: RevTree
}

/// One document of a `_bulk_get` (``Database/revisions(_:bodyBudget:)``).
public struct RevisionQuery: Sendable {
    public var id: String
    /// The revision asked for; nil for the winner.
    public var rev: RevID?
    /// With `rev`: the leaves descending from it instead, or `rev` itself when it has none (`latest=true`).
    public var latest: Bool

    public init(id: String, rev: RevID?, latest: Bool) {
        self.id = id
        self.rev = rev
        self.latest = latest
    }
}

/// What a ``RevisionQuery`` found.
public struct RevisionAnswer: Sendable {
    /// The document; nil when it was never stored.
    public var info: DocumentInfo?
    /// Each revision the query names (empty when `info` is nil), with what is stored of it (nil: not stored).
    public var revisions: [(rev: RevID, revision: StoredRevision?)]
}
