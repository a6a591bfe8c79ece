import CouchWire
import Foundation
import Replicator

/// What the server knows of one `_replicator` document: its scheduled job (the run in progress, or none while it
/// waits for a slot or for its pause after a crash to end, and the job's history), or the outcome written into it
/// (`completed`, `failed`).
/// `_scheduler/docs` and `_scheduler/jobs` read it.
struct ReplicatorDocState: Sendable {
    /// The document's revision this state is for.
    var rev: String
    /// The full replication id, once the document was read as a replication.
    var jobID: String?
    /// The endpoints as CouchDB shows them: URLs without credentials (with a final `/`), or local names.
    var source: String?
    var target: String?
    /// When the document was taken up (CouchDB's `start_time`; a retry keeps it).
    var startTime = Date()
    /// The scheduled job's events; nil once the document has an outcome.
    var history: SchedulerHistory?
    /// The run in progress; nil while the job waits to be started (again).
    var job: ReplicationJobs.Job?
    /// The replication each run copies (over fresh clients); nil once the document has an outcome. A waiting job
    /// holds only this: no thread, no connection.
    var template: Replication?
    /// The counters of the runs that ended (a crashed job's `info` keeps them).
    var carried = ReplicationStats()
    /// The outcome written into the document, for a job that ended (or a document that never became one).
    var outcome: Outcome?
    /// A one-shot `_replicate` waiting for its transient job's outcome.
    var waiter: TransientWaiter?

    enum Outcome: Sendable {
        /// A one-shot job that finished: its `_replication_stats`.
        case completed(stats: JSON, time: Date)
        /// A document that cannot run (CouchDB's `failed`): why.
        case failed(reason: String, time: Date)
    }

    init(rev: String) { self.rev = rev }

    /// CouchDB's state names: `running`, `crashing` (crashed, waiting to run again), `pending` (waiting for a slot
    /// with no recent crash: never started, or stopped by the scheduler), `completed`, `failed`.
    var state: String {
        switch outcome {
        case .completed?: return "completed"
        case .failed?: return "failed"
        case nil:
            if let job, !job.isFinished { return "running" }
            if errorCount > 0 || history?.crashReason != nil { return "crashing" }
            return "pending"
        }
    }

    /// Consecutive crashes (a `failed` document counts one, as CouchDB shows it).
    var errorCount: Int {
        switch outcome {
        case .completed?: 0
        case .failed?: 1
        case nil: history?.consecutiveCrashes ?? 0
        }
    }

    /// The counters of every run so far.
    var stats: ReplicationStats { job?.stats ?? carried }

    /// The endpoint of a `_replicator` document as CouchDB shows it: a URL without its credentials (and without
    /// a `#` fragment) ending in `/`, or a local database's name.
    static func shown(_ endpoint: JSON?) -> String? {
        guard let text = endpoint?.stringValue ?? endpoint?["url"]?.stringValue else { return nil }
        guard Endpoint.isURL(text), var url = URLComponents(string: text) else { return text }
        url.user = nil
        url.password = nil
        url.fragment = nil
        if !url.percentEncodedPath.hasSuffix("/") { url.percentEncodedPath += "/" }
        return url.string ?? text
    }
}

extension ReplicationStats {
    /// CouchDB's replication `info` (`couch_replicator_stats`), in its order; `sequences` adds `source_seq` and
    /// `through_seq`, which a running job's `info` has and a completed document's `_replication_stats` has not.
    func couchInfo(sequences: Bool) -> [(String, JSON)] {
        var fields: [(String, JSON)] = [
            ("revisions_checked", .int(missingChecked)), ("missing_revisions_found", .int(missingFound)),
            ("docs_read", .int(docsRead)), ("docs_written", .int(docsWritten)),
            ("changes_pending", changesPending.map(JSON.int) ?? .null), ("doc_write_failures", .int(docWriteFailures)),
            ("bulk_get_docs", .int(bulkGetDocs)), ("bulk_get_attempts", .int(bulkGetAttempts)),
            ("checkpointed_source_seq", checkpointedSeq),
        ]
        if sequences { fields += [("source_seq", throughSeq), ("through_seq", throughSeq)] }
        return fields
    }
}
