import CouchWire
import Foundation
import Replicator
import Synchronization

/// Continuous `_replicate` jobs, scheduled with the `_replicator` documents' as CouchDB's scheduler does (its
/// "transient" jobs): they count against `max_jobs`, wait `pending`, are rotated; unlike a document's, a job that
/// crashes is removed (`handle_crashed_job` for a job without a database), and `_replicate` with `cancel` removes
/// one, running or waiting.
///
/// They share the documents' table under keys no `_replicator` document can have (ids that start with `_` are
/// refused, except `_design/`, which the follower skips, and `_local/`, which has no changes).
extension ReplicatorDatabase {
    private static let transientPrefix = "_replicate/"

    static func transientKey(_ jobID: String) -> String { transientPrefix + jobID }

    static func isTransient(_ key: String) -> Bool { key.hasPrefix(transientPrefix) }

    /// Schedules a continuous `_replicate`; one already scheduled under its id stays as it is (CouchDB answers the
    /// same 202).
    func addTransient(_ replication: Replication) {
        let key = Self.transientKey(replication.fullID)
        var entry = ReplicatorDocState(rev: "")
        entry.jobID = replication.fullID
        entry.source = replication.source.redacted
        entry.target = replication.target.redacted
        entry.history = SchedulerHistory()
        entry.template = Replication(
            source: replication.source.fresh(), target: replication.target.fresh(), options: replication.options)
        let job = docs.withLock { docs -> ReplicationJobs.Job? in
            guard !docs.values.contains(where: { $0.jobID == replication.fullID && $0.history != nil }) else {
                return nil
            }
            docs[key] = entry
            return Self.startIfRoom(key, in: &docs, maxJobs: settings.maxJobs.value)
        }
        if let job { launch(job, id: key, rev: "") }
    }

    /// `_replicate` with `cancel`: removes the continuous job `jobID`, running or waiting.
    /// - Returns: whether there was one.
    func cancelTransient(_ jobID: String) -> Bool {
        guard let entry = docs.withLock({ $0.removeValue(forKey: Self.transientKey(jobID)) }) else { return false }
        if let job = entry.job, !job.isFinished {
            job.replication.cancel()
            logStopped(job, reason: "cancelled")
        }
        return true
    }

    /// A transient job's run ended: whatever the outcome (a crash, a cancel), the job goes.
    func transientFinished(_ job: ReplicationJobs.Job, key: String, _ outcome: Result<JSON, ReplicationError>) {
        let removed = docs.withLock { docs -> Bool in
            guard docs[key]?.job === job else { return false }
            docs[key] = nil
            return true
        }
        guard removed else { return }
        if case .failure(let error) = outcome, error != .cancelled {
            log.error(
                "continuous replication stopped",
                ["replication_id": job.replication.fullID, "error": error.description])
            schedule(.fill)
        }
    }
}
