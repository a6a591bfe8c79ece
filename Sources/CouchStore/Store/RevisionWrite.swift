import RevTree

/// One document revision to write.
public struct RevisionWrite: Sendable {
    public var docID: String
    /// `new_edits=false`: the new leaf first, then consecutive ancestors (from `_revisions`, see
    /// `RevID.path(start:ids:)`; without `_revisions`, just `[_rev]`). `new_edits=true`: `[]` for a new document
    /// (or a recreation), or `[base rev]`.
    public var path: [RevID]
    public var deleted: Bool
    /// Serialized JSON object of the user's fields (no `_id`, `_rev`, `_revisions`, `_attachments`, `_deleted`).
    public var body: [UInt8]
    public var attachments: [AttachmentRef]

    public init(docID: String, path: [RevID], deleted: Bool = false, body: [UInt8], attachments: [AttachmentRef] = []) {
        self.docID = docID
        self.path = path
        self.deleted = deleted
        self.body = body
        self.attachments = attachments
    }
}

/// The outcome of one `RevisionWrite`.
public struct WriteResult: Sendable {
    public var docID: String
    /// The written (or, for an idempotent resend, already present) revision, or why it was refused.
    public var result: Result<RevID, StoreError>

    public init(docID: String, result: Result<RevID, StoreError>) {
        self.docID = docID
        self.result = result
    }
}
