import CouchWire
import Foundation

/// CouchDB's scheduling rules (`couch_replicator_scheduler`, 3.4.3) as a value: given every scheduled job (running
/// or waiting) and the limits, which jobs to stop and which to start. Nothing here runs or stops anything; the
/// `ReplicatorDatabase` applies the `actions` in order. A decision records its `started`/`stopped` events in the
/// jobs' histories as it goes, because the later steps of a pass read them (a job stopped for excess is a
/// pending job the rotation may start again), as CouchDB's do from its table.
///
/// The rules:
/// - A job added starts at once only while the jobs (itself included) are fewer than `maxJobs`
///   (`maybe_start_newly_added_job`); otherwise it waits, `pending`, for a pass.
/// - A pass (every `interval`) first stops the running jobs beyond `maxJobs`, continuous ones first, the longest
///   running first (`stop_excess_jobs`); then, while jobs wait, it stops up to `maxChurn` (less what it already
///   stopped) of the longest-running continuous jobs — one-shot jobs are never rotated out — and starts waiting
///   jobs into the free slots, the ones that started longest ago (or never) first (`rotate_jobs`).
/// - A waiting job that crashed starts only once its backoff has passed (`not_recently_crashed`).
///
/// CouchDB also orders by a fair-share priority per replicator database (`couch_replicator_share`); couchlite has
/// one replicator database, where all jobs have the same share, so the order is by last start alone.
struct SchedulerPlan: Sendable {
    /// One scheduled job as the rules see it.
    struct Job: Sendable, Equatable {
        var id: String
        var continuous: Bool
        /// Whether it has a run (CouchDB's `pid`); a job stopped or crashed waits without one.
        var running: Bool
        var history: SchedulerHistory

        /// CouchDB's `last_started`: the newest `started` event, or the epoch for a job never started.
        var lastStarted: Date { history.events.first { $0.kind == .started }?.time ?? .distantPast }
    }

    /// The limits of `[replicator]`.
    struct Limits: Sendable, Equatable {
        /// `max_jobs`: most jobs running at once (CouchDB's 500).
        var maxJobs: Int
        /// `max_churn`: most jobs one pass stops to start others (CouchDB's 20).
        var maxChurn: Int
        /// The first pause after a crash (`--replicator-retry`, CouchDB's 30 s), doubling per consecutive crash.
        var retryBase: Duration
    }

    enum Action: Sendable, Equatable {
        case start(String)
        case stop(String)
    }

    private(set) var jobs: [Job]
    let limits: Limits
    /// The time of the decision (its events' timestamps, the end of backoffs).
    let now: Date
    /// What to do, in order.
    private(set) var actions: [Action] = []

    init(_ jobs: [Job], limits: Limits, now: Date = Date()) {
        self.jobs = jobs
        self.limits = limits
        self.now = now
    }

    var runningCount: Int { jobs.count(where: \.running) }
    var pendingCount: Int { jobs.count - runningCount }

    /// Whether a job just added (already among `jobs`) starts at once (`maybe_start_newly_added_job`).
    static func startsWhenAdded(total: Int, running: Int, maxJobs: Int) -> Bool {
        total < maxJobs && running < maxJobs
    }

    /// A scheduling pass (`reschedule`): stops the excess, rotates, starts.
    mutating func reschedule() {
        let excess = max(0, runningCount - limits.maxJobs)
        let continuousStopped = stop(excess, continuous: true)
        stop(excess - continuousStopped, continuous: false)
        rotate(churnSoFar: excess)
    }

    /// After a crash, or when a crashed job's pause ends, while the jobs are fewer than `maxJobs`: waiting jobs
    /// whose pause is over start into the free slots (`start_pending_jobs`); nothing is stopped.
    mutating func startPending() {
        guard runningCount < limits.maxJobs, pendingCount > 0 else { return }
        start(limits.maxJobs - runningCount)
    }

    /// When the next waiting job's pause after a crash ends, if one is waiting for that alone.
    var nextRetry: Date? {
        jobs.filter { !$0.running && !isHealthy($0) }.compactMap { job in
            job.history.latestCrash.map { $0 + job.history.backoff(base: limits.retryBase).timeInterval }
        }.min()
    }

    private mutating func rotate(churnSoFar: Int) {
        let churn = max(0, limits.maxChurn - churnSoFar)
        let slots = limits.maxJobs - runningCount
        guard slots >= 0 else { return }
        stop(min(pendingCount - slots, runningCount, churn), continuous: true)
        start(max(0, limits.maxJobs - runningCount))
    }

    /// Stops up to `count` running jobs of the kind, the longest running first. Returns how many.
    @discardableResult
    private mutating func stop(_ count: Int, continuous: Bool) -> Int {
        guard count > 0 else { return 0 }
        let chosen = jobs.indices.filter { jobs[$0].running && jobs[$0].continuous == continuous }
            .sorted(by: longestAgo).prefix(count)
        for index in chosen {
            jobs[index].running = false
            jobs[index].history.record(.stopped, at: now)
            actions.append(.stop(jobs[index].id))
        }
        return chosen.count
    }

    /// Starts up to `count` waiting jobs not in a pause after a crash, the ones started longest ago first
    /// (`pending_jobs`).
    private mutating func start(_ count: Int) {
        guard count > 0 else { return }
        let chosen = jobs.indices.filter { !jobs[$0].running && isHealthy(jobs[$0]) }
            .sorted(by: longestAgo).prefix(count)
        for index in chosen {
            jobs[index].running = true
            jobs[index].history.record(.started, at: now)
            actions.append(.start(jobs[index].id))
        }
    }

    /// The order of both choices: the job started longest ago (or never) first, then by id (CouchDB's order of
    /// `{priority, last_started}` keys, ties by the job).
    private func longestAgo(_ a: Int, _ b: Int) -> Bool {
        (jobs[a].lastStarted, jobs[a].id) < (jobs[b].lastStarted, jobs[b].id)
    }

    /// CouchDB's `not_recently_crashed`: a job just added or stopped may start; one that crashed waits out its
    /// backoff.
    private func isHealthy(_ job: Job) -> Bool {
        let events = job.history.events
        if events.count == 1 && events[0].kind == .added { return true }
        if events.first?.kind == .stopped { return true }
        guard let crash = job.history.latestCrash else { return true }
        return now.timeIntervalSince(crash) >= job.history.backoff(base: limits.retryBase).timeInterval
    }
}
