import CouchWire
import Foundation
import Replicator
import RevTree
import Synchronization

/// The replications this server runs: one-shot ones while their `_replicate` request waits, continuous
/// ones and `_replicator` jobs on threads of their own. Cancel, `_active_tasks` and `_scheduler/jobs`
/// read them here.
final class ReplicationJobs: Sendable {
    final class Job: Sendable {
        let replication: Replication
        /// The `_replicator` document that started it, if any.
        let docID: String?
        let state = Mutex<JobState>(JobState())
        init(_ replication: Replication, docID: String?) {
            self.replication = replication
            self.docID = docID
        }

        var isFinished: Bool { state.withLock { $0.finished } }
    }

    struct JobState {
        var name = "running"
        var error: String?
        var result: JSON?
        var finished = false
    }

    private let jobs = Mutex<[String: Job]>([:])

    /// Registers a job under its full replication id.
    /// - Returns: false when a job with that id is already running (CouchDB answers it as the same job).
    func add(_ job: Job) -> Bool {
        jobs.withLock { jobs in
            if let existing = jobs[job.replication.fullID], !existing.state.withLock({ $0.finished }) { return false }
            jobs[job.replication.fullID] = job
            return true
        }
    }

    func remove(_ job: Job) {
        jobs.withLock { jobs in
            if jobs[job.replication.fullID] === job { jobs[job.replication.fullID] = nil }
        }
    }

    func job(id: String) -> Job? { jobs.withLock { $0[id] } }

    func job(docID: String) -> Job? { jobs.withLock { $0.values.first { $0.docID == docID } } }

    var all: [Job] { jobs.withLock { Array($0.values) } }

    /// Runs `job` on a thread of its own; `finished` is told the outcome (for `_replicator` documents).
    /// - Parameter hold: leases the job's local databases for as long as it runs (``App/holdLocalDatabases(of:)``).
    func startInBackground(
        _ job: Job, hold: @escaping @Sendable () -> [DatabaseLease] = { [] },
        finished: @escaping @Sendable (Result<JSON, ReplicationError>) -> Void
    ) {
        let thread = Thread { [self] in
            let leases = hold()
            let outcome = Result { () throws(ReplicationError) in try job.replication.run() }
            for lease in leases { lease.release() }
            job.state.withLock {
                $0.finished = true
                switch outcome {
                case .success(let body):
                    $0.name = "completed"
                    $0.result = body
                case .failure(let error):
                    $0.name = error == .cancelled ? "cancelled" : "failed"
                    $0.error = error.description
                }
            }
            remove(job)
            finished(outcome)
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Cancels every job (server shutdown).
    func cancelAll() {
        for job in all { job.replication.cancel() }
    }
}
