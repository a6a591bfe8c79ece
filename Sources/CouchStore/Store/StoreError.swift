/// Errors of the document store. Each maps to one CouchDB error (the server owns the wire table).
public enum StoreError: Error, Equatable, Sendable {
    /// 409 `conflict` / "Document update conflict."
    case conflict
    /// 404 `not_found` with the given reason (`missing`, `deleted`).
    case notFound(String)
    /// 412 `missing_stub`: a stub names an attachment no ancestor has (or its revpos/digest do not match).
    case missingStub(String)
    /// 400 `bad_request` / "Invalid rev format" (rev id or `_revisions` malformed).
    case invalidRev
    /// 400 `bad_request` with a reason.
    case badRequest(String)
    /// 400 `illegal_docid` / `bad_request` with a reason (empty, too long, …).
    case invalidDocID(String)
    /// 413 `document_too_large`: the body exceeds `StoreLimits.maxDocumentBytes`.
    case documentTooLarge(String)
    /// 412 `file_exists`: the database already exists.
    case fileExists
    /// 404 `not_found` / "Database does not exist."
    case dbNotFound
    /// 500: SQLite failed (message for the log) or the database was closed underneath the caller.
    case internalError(String)
}

/// A batch applied with `abortOnInvalid` that wrote nothing because of one document's failure.
public struct BatchAborted: Error, Equatable, Sendable {
    /// The document that failed.
    public let docID: String
    public let error: StoreError

    public init(docID: String, error: StoreError) {
        self.docID = docID
        self.error = error
    }
}

/// Limits of the store, checked before anything is written.
public enum StoreLimits {
    /// Longest accepted document id, in UTF-8 bytes. CouchDB's `max_document_id_length` defaults to infinity;
    /// 8 KiB keeps ids well inside the request-line limit while rejecting absurd ones.
    public static let maxDocIDBytes = 8 * 1024
    /// Largest accepted document body, in bytes (CouchDB `max_document_size` default 8,000,000).
    public static let maxDocumentBytes = 8_000_000
    /// Most attachments accepted on one revision.
    public static let maxAttachmentsPerRevision = 10_000
    /// Longest accepted attachment name, in UTF-8 bytes.
    public static let maxAttachmentNameBytes = 4 * 1024
}
