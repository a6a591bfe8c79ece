import CouchWire
import Foundation
import Replicator
import Synchronization

/// `_replicate` jobs, scheduled with the `_replicator` documents' as CouchDB's scheduler does (its "transient"
/// jobs): they count against `max_jobs` and wait `pending`; continuous ones are rotated, one-shot ones (whose
/// request waits for the outcome, `do_replication_loop`) run to their end once started; unlike a document's, a job
/// that crashes is removed (`handle_crashed_job` for a job without a database), and `_replicate` with `cancel`
/// removes one, running or waiting.
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
        _ = scheduleTransient(replication, waiter: nil)
    }

    /// Puts `replication` in the table as a transient job (with `waiter`, a one-shot's request) and starts it if
    /// there is room. False, with nothing changed, when a job of its id is already scheduled.
    private func scheduleTransient(_ replication: Replication, waiter: TransientWaiter?) -> Bool {
        let key = Self.transientKey(replication.fullID)
        var entry = ReplicatorDocState(rev: "")
        entry.jobID = replication.fullID
        entry.source = replication.source.redacted
        entry.target = replication.target.redacted
        entry.history = SchedulerHistory()
        entry.template = Replication(
            source: replication.source.fresh(), target: replication.target.fresh(), options: replication.options)
        entry.waiter = waiter
        let added = docs.withLock { docs -> (added: Bool, job: ReplicationJobs.Job?) in
            guard !docs.values.contains(where: { $0.jobID == replication.fullID && $0.history != nil }) else {
                return (false, nil)
            }
            docs[key] = entry
            return (true, Self.startIfRoom(key, in: &docs, maxJobs: settings.maxJobs.value))
        }
        if let job = added.job { launch(job, id: key, rev: "") }
        return added.added
    }

    /// Schedules a one-shot `_replicate` as a transient job and waits for its outcome: it starts at once while
    /// fewer than `max_jobs` are scheduled, else waits `pending` for a pass (CouchDB's `do_replication_loop`).
    /// - Returns: nil when a job of the same id is already scheduled (its request is the one told the outcome).
    func runTransient(_ replication: Replication) -> Result<JSON, ReplicationError>? {
        let waiter = TransientWaiter()
        guard scheduleTransient(replication, waiter: waiter) else { return nil }
        if isStopped { releaseWaiters() }
        return waiter.wait()
    }

    /// `_replicate` with `cancel`: removes the transient job `jobID`, running or waiting (a one-shot's request is
    /// answered `cancelled`).
    /// - Returns: whether there was one.
    func cancelTransient(_ jobID: String) -> Bool {
        guard let entry = docs.withLock({ $0.removeValue(forKey: Self.transientKey(jobID)) }) else { return false }
        if let job = entry.job, !job.isFinished {
            job.replication.cancel()
            logStopped(job, reason: "cancelled")
        }
        entry.waiter?.deliver(.failure(.cancelled))
        return true
    }

    /// The server stops: one-shot requests still waiting for a slot are answered `cancelled` (running ones are,
    /// when their run ends).
    func releaseWaiters() {
        let waiting = docs.withLock { docs -> [TransientWaiter] in
            let keys = docs.filter { Self.isTransient($0.key) && $0.value.waiter != nil && $0.value.job == nil }.keys
            return keys.compactMap { docs.removeValue(forKey: $0)?.waiter }
        }
        for waiter in waiting { waiter.deliver(.failure(.cancelled)) }
    }

    /// A transient job's run ended: whatever the outcome (a crash, a cancel, a one-shot's end), the job goes, and a
    /// one-shot's request is told.
    func transientFinished(_ job: ReplicationJobs.Job, key: String, _ outcome: Result<JSON, ReplicationError>) {
        let removed = docs.withLock { docs -> ReplicatorDocState? in
            guard docs[key]?.job === job else { return nil }
            return docs.removeValue(forKey: key)
        }
        guard let removed else { return }
        if let waiter = removed.waiter {
            waiter.deliver(outcome)
            return schedule(.fill)  // its slot is free
        }
        if case .failure(let error) = outcome, error != .cancelled {
            log.error(
                "continuous replication stopped",
                ["replication_id": job.replication.fullID, "error": error.description])
            schedule(.fill)
        }
    }
}

/// Where a one-shot `_replicate` request waits for its scheduled job's outcome; the first outcome delivered is the
/// one it gets.
final class TransientWaiter: Sendable {
    private let outcome = Mutex<Result<JSON, ReplicationError>?>(nil)
    private let arrived = NSCondition()

    func deliver(_ result: Result<JSON, ReplicationError>) {
        arrived.lock()
        defer { arrived.unlock() }
        outcome.withLock { if $0 == nil { $0 = result } }
        arrived.broadcast()
    }

    func wait() -> Result<JSON, ReplicationError> {
        arrived.lock()
        defer { arrived.unlock() }
        while true {
            if let result = outcome.withLock({ $0 }) { return result }
            arrived.wait()
        }
    }
}
