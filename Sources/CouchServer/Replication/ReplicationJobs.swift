import CouchStore
import CouchWire
import Foundation
import Replicator
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
        /// The counters of the earlier runs of a `_replicator` job that crashed and is tried again: CouchDB's
        /// `info` keeps counting across retries, and keeps the last `checkpointed_source_seq` until the new run
        /// has read its checkpoint.
        let carried: ReplicationStats
        /// When it was started (as CouchDB's `started` history event).
        let started = Date()
        /// Names this run as CouchDB's `pid` does its job process (`<0.N.0>`, N counting runs since start): a
        /// client can tell a job that runs (a pid) from one waiting to (null), and one run from the next.
        let pid = "<0.\(Job.runs.wrappingAdd(1, ordering: .relaxed).newValue).0>"
        private static let runs = Atomic<Int>(0)

        init(_ replication: Replication, docID: String?, carried: ReplicationStats = ReplicationStats()) {
            self.replication = replication
            self.docID = docID
            self.carried = carried
        }

        var isFinished: Bool { state.withLock { $0.finished } }

        /// This run's counters on top of the earlier runs'.
        var stats: ReplicationStats { replication.stats.carrying(carried) }
    }

    struct JobState {
        package var name = "running"
        var error: String?
        var result: JSON?
        var finished = false
    }

    private let jobs = Mutex<[String: Job]>([:])
    /// Since start: jobs added, refused as duplicates, removed, and ended by an error (`couch_replicator`
    /// stats); the counters of finished jobs, to which the running ones' are added when read.
    private let history = Mutex(History())
    /// Set by `stopAll`: jobs added later are stopped at once.
    private let closing = Mutex(false)

    struct History {
        var adds = 0
        var duplicateAdds = 0
        var removes = 0
        var crashes = 0
        var finished = ReplicationStats()
    }

    /// What `_node/_local/_stats` reports under `couch_replicator`.
    struct Totals {
        var running = 0
        var history = History()
        /// Finished and running jobs' counters summed.
        var stats = ReplicationStats()
    }

    /// Registers a job under its full replication id.
    /// - Returns: false when a job with that id is already running (CouchDB answers it as the same job).
    package func add(_ job: Job) -> Bool {
        let added = jobs.withLock { jobs in
            if let existing = jobs[job.replication.fullID], !existing.state.withLock({ $0.finished }) { return false }
            jobs[job.replication.fullID] = job
            return true
        }
        history.withLock { history in
            if added { history.adds += 1 } else { history.duplicateAdds += 1 }
        }
        if added && closing.withLock({ $0 }) { job.replication.stop() }
        return added
    }

    func remove(_ job: Job) {
        jobs.withLock { jobs in
            guard jobs[job.replication.fullID] === job else { return }
            jobs[job.replication.fullID] = nil
            let stats = job.replication.stats
            history.withLock {
                $0.removes += 1
                $0.finished.add(stats)
            }
        }
    }

    /// Counts a job that ended with an error (not a cancel).
    func noteCrash() { history.withLock { $0.crashes += 1 } }

    /// The `couch_replicator` figures: running jobs and everything since start.
    var totals: Totals {
        jobs.withLock { jobs in
            var totals = Totals()
            totals.history = history.withLock { $0 }
            totals.stats = totals.history.finished
            for job in jobs.values where !job.isFinished {
                totals.running += 1
                totals.stats.add(job.replication.stats)
            }
            return totals
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
            if case .failure(let error) = outcome, error != .cancelled { noteCrash() }
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

    /// Server shutdown: asks every job to stop after checkpointing (`Replication.stop`), waits for them
    /// until `deadline`, then cancels those still running. Jobs added meanwhile are stopped at once.
    func stopAll(within timeout: Duration) {
        closing.withLock { $0 = true }
        for job in all { job.replication.stop() }
        let deadline = ContinuousClock.now + timeout
        while all.contains(where: { !$0.isFinished }) && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        cancelAll()
    }
}

extension ReplicationStats {
    /// These counters after `earlier` ones (an earlier run of the same job); sequences this run has not reached
    /// yet (still 0, before it read its checkpoint) are the earlier run's.
    func carrying(_ earlier: ReplicationStats) -> ReplicationStats {
        var total = self
        total.add(earlier)
        total.bulkGetDocs += earlier.bulkGetDocs
        total.bulkGetAttempts += earlier.bulkGetAttempts
        total.attachmentBytes += earlier.attachmentBytes
        if checkpointedSeq == 0 { total.checkpointedSeq = earlier.checkpointedSeq }
        if throughSeq == 0 { total.throughSeq = earlier.throughSeq }
        if changesPending == nil { total.changesPending = earlier.changesPending }
        return total
    }

    /// Adds another job's counters (the sequences are not summed).
    package mutating func add(_ other: ReplicationStats) {
        docsRead += other.docsRead
        docsWritten += other.docsWritten
        docWriteFailures += other.docWriteFailures
        missingChecked += other.missingChecked
        missingFound += other.missingFound
        checkpointsWritten += other.checkpointsWritten
        checkpointFailures += other.checkpointFailures
    }
}
