import CouchWire
import Foundation
import Replicator
import Synchronization

/// The `_replicator` jobs' scheduler (and continuous `_replicate` jobs', see `ReplicatorDatabase+Transient`):
/// `SchedulerPlan` decides (CouchDB's rules), this applies its decisions to the documents' states and to the runs. A running job has a thread of its own; a waiting one (`pending`, or
/// `crashing` until its pause ends) has only its state and its template, no thread and no connection.
///
/// One timer thread drives it, asleep on `settings.changed` between passes: it wakes for the pass every
/// `[replicator] interval`, for the end of a crashed job's pause while there is room for it (the jobs are fewer
/// than `max_jobs`, where CouchDB waits for its next pass; couchlite's retries keep their `--replicator-retry`
/// timing), when a setting changes (a new `interval` counts from the last pass) and when the server stops.
extension ReplicatorDatabase {
    /// What woke the scheduler.
    enum Pass {
        /// The pass every `interval`: stop the excess, rotate, start.
        case rotation
        /// A crash, or the end of a pause after one: start what waits into free slots, stop nothing.
        case fill
    }

    /// The shortest sleep of the timer, so that a deadline just passed can never make it spin.
    private static let shortestWait = Duration.milliseconds(50)

    /// The scheduler's timer (on a thread of its own until `stop()`).
    func runTimer() {
        var lastPass = ContinuousClock.now
        while !isStopped {
            let now = ContinuousClock.now
            var wake = lastPass + settings.interval
            // A crashed job's pause ending (a job whose pause is over is no longer waiting for one).
            let retry = nextRetry()
            if let retry { wake = min(wake, now + .seconds(max(0, retry.timeIntervalSinceNow))) }
            settings.changed.sleep(for: max(wake - now, Self.shortestWait))
            if isStopped { return }
            if ContinuousClock.now >= lastPass + settings.interval {
                lastPass = ContinuousClock.now
                schedule(.rotation)
            } else if let retry, retry <= Date() {
                schedule(.fill)
            }
        }
    }

    /// The limits a decision is made with now.
    private var limits: SchedulerPlan.Limits {
        SchedulerPlan.Limits(
            maxJobs: settings.maxJobs.value, maxChurn: settings.maxChurn.value, retryBase: retryBase)
    }

    /// The scheduled jobs (a document with a job, running or waiting) as the rules see them.
    private static func plan(_ docs: [String: ReplicatorDocState], limits: SchedulerPlan.Limits) -> SchedulerPlan {
        let jobs = docs.compactMap { id, entry -> SchedulerPlan.Job? in
            guard entry.outcome == nil, let history = entry.history, let template = entry.template else { return nil }
            return SchedulerPlan.Job(
                id: id, continuous: template.options.continuous, running: entry.job != nil, history: history)
        }
        return SchedulerPlan(jobs, limits: limits)
    }

    /// When a crashed job's pause ends, if it could then start at once (the jobs are fewer than `max_jobs`).
    private func nextRetry() -> Date? {
        let limits = limits
        let plan = docs.withLock { Self.plan($0, limits: limits) }
        guard plan.jobs.count < limits.maxJobs else { return nil }
        return plan.nextRetry
    }

    /// Decides and applies one pass: the jobs it stops leave their threads (after a checkpoint) and become pending,
    /// the ones it starts get threads.
    func schedule(_ pass: Pass) {
        let limits = limits
        var stopped: [ReplicationJobs.Job] = []
        var started: [(job: ReplicationJobs.Job, id: String, rev: String)] = []
        docs.withLock { docs in
            var plan = Self.plan(docs, limits: limits)
            switch pass {
            case .rotation: plan.reschedule()
            case .fill:
                // CouchDB starts waiting jobs after a crash only while the jobs are fewer than `max_jobs`.
                guard plan.jobs.count < limits.maxJobs else { return }
                plan.startPending()
            }
            let histories = Dictionary(plan.jobs.map { ($0.id, $0.history) }, uniquingKeysWith: { first, _ in first })
            for action in plan.actions {
                switch action {
                case .stop(let id):
                    guard let job = docs[id]?.job else { continue }
                    docs[id]?.carried = job.stats
                    docs[id]?.job = nil
                    docs[id]?.history = histories[id]
                    stopped.append(job)
                case .start(let id):
                    guard let rev = docs[id]?.rev, let job = Self.newRun(id, in: &docs) else { continue }
                    docs[id]?.history = histories[id]
                    started.append((job, id, rev))
                }
            }
        }
        for job in stopped {
            // Out of the running jobs at once (its thread only checkpoints now): its next run may start at once.
            box.app?.replications.remove(job)
            job.replication.stop()
            logStopped(job, reason: "the scheduler made room for a waiting job (max_jobs)")
        }
        for run in started { launch(run.job, id: run.id, rev: run.rev) }
    }

    /// A newly scheduled job's first run, if it starts at once (`SchedulerPlan.startsWhenAdded`).
    static func startIfRoom(_ id: String, in docs: inout [String: ReplicatorDocState], maxJobs: Int) -> ReplicationJobs
        .Job?
    {
        let scheduled = docs.values.filter { $0.outcome == nil && $0.history != nil && $0.template != nil }
        let running = scheduled.count { $0.job != nil }
        guard SchedulerPlan.startsWhenAdded(total: scheduled.count, running: running, maxJobs: maxJobs),
            let job = newRun(id, in: &docs)
        else { return nil }
        docs[id]?.history?.record(.started, at: job.started)
        return job
    }

    /// A new run of document `id`'s job, over fresh clients and counting on from the runs before; it is the
    /// document's run from now on.
    private static func newRun(_ id: String, in docs: inout [String: ReplicatorDocState]) -> ReplicationJobs.Job? {
        guard let entry = docs[id], let template = entry.template else { return nil }
        let replication = Replication(
            source: template.source.fresh(), target: template.target.fresh(), options: template.options)
        let job = ReplicationJobs.Job(replication, docID: isTransient(id) ? nil : id, carried: entry.carried)
        docs[id]?.job = job
        return job
    }

    /// Runs `job`, already document `id`'s run at revision `rev`, on a thread of its own.
    func launch(_ job: ReplicationJobs.Job, id: String, rev: String) {
        guard let app = box.app else { return }
        guard app.replications.add(job) else {
            if Self.isTransient(id) {
                // A `_replicate` of the same id runs outside the scheduler: this one goes.
                let entry = docs.withLock { $0[id]?.job === job ? $0.removeValue(forKey: id) : nil }
                entry?.waiter?.deliver(.failure(.cancelled))
                return
            }
            let other = app.replications.job(id: job.replication.fullID)?.docID
            return failDuplicate(job.replication.fullID, id: id, rev: rev, of: other)
        }
        guard isCurrent(job, id: id, rev: rev), !isStopped else {
            app.replications.remove(job)
            // A one-shot `_replicate` that will not run now (the server stops) is answered, not left waiting.
            if Self.isTransient(id) {
                let entry = docs.withLock { $0[id]?.job === job ? $0.removeValue(forKey: id) : nil }
                entry?.waiter?.deliver(.failure(.cancelled))
            }
            return
        }
        log.info(
            "replication job started",
            [
                "replication_id": job.replication.fullID, "doc_id": job.docID ?? "",
                "source": job.replication.source.redacted,
                "target": job.replication.target.redacted,
            ])
        app.replications.startInBackground(job, hold: { [app] in app.holdLocalDatabases(of: job.replication) }) {
            [self] outcome in
            finished(job, id: id, rev: rev, outcome)
        }
    }

    /// Whether `job` is still document `id`'s run at `rev` (not stopped by the scheduler, the document unchanged).
    private func isCurrent(_ job: ReplicationJobs.Job, id: String, rev: String) -> Bool {
        docs.withLock { $0[id]?.rev == rev && $0[id]?.job === job }
    }

    /// A run ended (on its thread). A run the scheduler stopped, or whose document changed, is over already.
    private func finished(
        _ job: ReplicationJobs.Job, id: String, rev: String, _ outcome: Result<JSON, ReplicationError>
    ) {
        if Self.isTransient(id) { return transientFinished(job, key: id, outcome) }
        guard isCurrent(job, id: id, rev: rev) else { return }
        switch outcome {
        case .success:
            guard !job.replication.options.continuous else { return }
            let info = job.stats.couchInfo(sequences: false)
            let start = docs.withLock { $0[id]?.startTime } ?? job.started
            let stats = JSON.object(JSONObject(info + [("start_time", .string(SchedulerHistory.iso8601(start)))]))
            writeOutcome(id, rev: rev, .completed(stats: stats, time: Date()))
            log.info("replication completed", ["replication_id": job.replication.fullID, "doc_id": id])
        case .failure(.cancelled):
            return
        case .failure(let error) where error.isDocumentError:
            record(id, rev: rev, failed: error.description)
        case .failure(let error):
            crashed(job, id: id, rev: rev, error)
        }
    }

    /// A run crashed: the job waits, `crashing`, without a thread, for CouchDB's backoff (from `SchedulerHistory`)
    /// and a free slot; other waiting jobs may take the slot it left (`Pass.fill`).
    private func crashed(_ job: ReplicationJobs.Job, id: String, rev: String, _ error: ReplicationError) {
        let reason = error.schedulerReason(source: job.replication.source, target: job.replication.target)
        let crash = docs.withLock { docs -> (pause: Duration, count: Int)? in
            guard var entry = docs[id], entry.rev == rev, entry.job === job, var history = entry.history else {
                return nil
            }
            history.record(.crashed, reason: reason)
            entry.history = history
            entry.carried = job.stats
            entry.job = nil
            docs[id] = entry
            return (history.backoff(base: retryBase), history.consecutiveCrashes)
        }
        guard let crash, !isStopped else { return }
        log.error(
            "replication job crashed",
            [
                "replication_id": job.replication.fullID, "doc_id": id, "error_count": String(crash.count),
                "retry_in_s": String(crash.pause.components.seconds), "reason": reason,
            ])
        schedule(.fill)
        // The timer's next wake may now be this job's retry.
        settings.changed.wake()
    }
}
