import CouchWire

/// What a replication does besides copying everything once (CouchDB's `_replicate` fields).
public struct ReplicationOptions: Sendable {
    /// Keep following the source's changes until cancelled.
    public var continuous = false
    /// `PUT` the target database when it does not exist.
    public var createTarget = false
    /// Only these documents (`filter=_doc_ids`).
    public var docIDs: [String]?
    /// Only documents matching this Mango selector (`filter=_selector`).
    public var selector: JSON?
    /// Start here instead of at the checkpoint.
    public var sinceSeq: JSON?
    /// `_changes` rows handled per batch.
    public var batchSize = 500
    /// Checkpoint after this many documents written…
    public var checkpointDocs = 5000
    /// …or this long after the last checkpoint, and always at the end.
    public var checkpointInterval: Duration = .seconds(30)
    /// Attempts after the first, per request, on network errors and 5xx.
    public var retries = 5
    /// The first pause before a retry; doubled each time (CouchDB: 250 ms).
    public var retryDelay: Duration = .milliseconds(250)
    /// Documents with attachments moved at the same time (each on its own connections).
    public var connections = 4
    /// Use `_bulk_get` until the source shows it has none.
    public var useBulkGet = true
    /// Identifies this replicator in the replication id (the server uuid), so two machines that replicate
    /// the same pair of URLs keep separate checkpoints.
    public var replicatorIdentity = ""

    public init() {}

    /// The options that change which documents are replicated, in the replication id. `continuous` and
    /// `create_target` are not among them (as in CouchDB, they only suffix the job id), so a one-shot run
    /// and a continuous one of the same pair share their checkpoints.
    var identityJSON: JSON {
        var fields: [(String, JSON)] = []
        if let docIDs { fields.append(("doc_ids", .array(docIDs.sorted().map(JSON.string)))) }
        if let selector { fields.append(("selector", selector)) }
        return .object(JSONObject(fields))
    }
}

/// Counters of one replication session (CouchDB's history entry and `_active_tasks` fields).
public struct ReplicationStats: Sendable, Equatable {
    public var missingChecked = 0
    public var missingFound = 0
    public var docsRead = 0
    public var docsWritten = 0
    public var docWriteFailures = 0
    public var bulkGetDocs = 0
    public var bulkGetAttempts = 0
    public var changesPending: Int?
    /// Attachment bytes sent to the target.
    public var attachmentBytes = 0
    public var throughSeq: JSON = 0
    public var checkpointedSeq: JSON = 0
    /// Checkpoints written on the target, and attempts that failed.
    public var checkpointsWritten = 0
    public var checkpointFailures = 0

    public init() {}
}
