import Foundation
import Testing

@testable import CouchServer

/// CouchDB's scheduling decisions (`couch_replicator_scheduler`'s own tests, 3.4.3, case by case): which waiting
/// jobs start, which running ones are stopped for excess or rotated out, `max_churn`, crashed jobs, one-shot versus
/// continuous jobs, `max_jobs` lowered below the jobs running.
@Suite struct SchedulerPlanTests {
    private static let epoch = Date(timeIntervalSince1970: 1_800_000_000)
    private let now = Self.epoch + 10_000

    /// A job `n` that started at second `n` and, unless `running`, was stopped a second later (CouchDB's test jobs).
    private func job(_ n: Int, continuous: Bool, running: Bool) -> SchedulerPlan.Job {
        var history = SchedulerHistory(added: Self.epoch)
        history.record(.started, at: Self.epoch + Double(n))
        if !running { history.record(.stopped, at: Self.epoch + Double(n) + 1) }
        return SchedulerPlan.Job(id: "\(n)", continuous: continuous, running: running, history: history)
    }

    private func continuous(_ n: Int) -> SchedulerPlan.Job { job(n, continuous: true, running: false) }
    private func continuousRunning(_ n: Int) -> SchedulerPlan.Job { job(n, continuous: true, running: true) }
    private func oneshot(_ n: Int) -> SchedulerPlan.Job { job(n, continuous: false, running: false) }
    private func oneshotRunning(_ n: Int) -> SchedulerPlan.Job { job(n, continuous: false, running: true) }

    private func plan(_ jobs: [SchedulerPlan.Job], maxJobs: Int, maxChurn: Int = 20) -> SchedulerPlan {
        SchedulerPlan(jobs, limits: .init(maxJobs: maxJobs, maxChurn: maxChurn, retryBase: .seconds(30)), now: now)
    }

    /// Reschedules `jobs` (one pass) and returns the plan after it.
    private func pass(_ jobs: [SchedulerPlan.Job], maxJobs: Int, maxChurn: Int = 20) -> SchedulerPlan {
        var plan = plan(jobs, maxJobs: maxJobs, maxChurn: maxChurn)
        plan.reschedule()
        return plan
    }

    private func running(_ plan: SchedulerPlan) -> [String] { plan.jobs.filter(\.running).map(\.id).sorted() }
    private func stopped(_ plan: SchedulerPlan) -> [String] { plan.jobs.filter { !$0.running }.map(\.id).sorted() }

    @Test func aNewJobStartsOnlyWhileTheJobsItselfCountedAreFewerThanMaxJobs() {
        #expect(SchedulerPlan.startsWhenAdded(total: 1, running: 0, maxJobs: 500))
        #expect(!SchedulerPlan.startsWhenAdded(total: 1, running: 0, maxJobs: 1))
        #expect(!SchedulerPlan.startsWhenAdded(total: 500, running: 10, maxJobs: 500))
        // Crashing and pending jobs count: 9 waiting after crashes leave no room for a 10th job with max_jobs 10.
        #expect(!SchedulerPlan.startsWhenAdded(total: 10, running: 0, maxJobs: 10))
        #expect(!SchedulerPlan.startsWhenAdded(total: 1, running: 0, maxJobs: 0))
    }

    @Test func oneJobStarts() {
        #expect(running(pass([oneshot(1)], maxJobs: 500)) == ["1"])
    }

    @Test func noJobStartsWhenMaxJobsIsZero() {
        #expect(running(pass([oneshot(1)], maxJobs: 0)) == [])
    }

    @Test func oneJobStartsWhenMaxJobsIsOne() {
        let plan = pass([oneshot(1), oneshot(2)], maxJobs: 1)
        #expect(running(plan) == ["1"] && stopped(plan) == ["2"])
    }

    @Test func maxChurnDoesNotThrottleTheInitialStart() {
        #expect(running(pass([oneshot(1), oneshot(2)], maxJobs: 500, maxChurn: 0)) == ["1", "2"])
    }

    @Test func excessOneShotJobsAreStoppedWhenMaxJobsIsLowered() {
        let once = pass([oneshotRunning(1), oneshotRunning(2)], maxJobs: 1)
        #expect(running(once) == ["2"])
        #expect(running(pass(once.jobs, maxJobs: 0)) == [])
    }

    @Test func excessContinuousJobsAreStoppedWhenMaxJobsIsLowered() {
        let once = pass([continuousRunning(1), continuousRunning(2)], maxJobs: 1)
        #expect(once.runningCount == 1 && once.pendingCount == 1)
        #expect(pass(once.jobs, maxJobs: 0).runningCount == 0)
    }

    @Test func excessStopsContinuousJobsBeforeOneShotOnes() {
        let jobs = [continuousRunning(1), oneshotRunning(2), continuousRunning(3)]
        let two = pass(jobs, maxJobs: 2)
        #expect(two.runningCount == 2 && two.jobs.contains { $0.id == "2" && $0.running })
        let one = pass(two.jobs, maxJobs: 1)
        #expect(running(one) == ["2"])
        #expect(running(pass(one.jobs, maxJobs: 0)) == [])
    }

    @Test func theLongestRunningIsStoppedFirst() {
        let plan = pass([continuousRunning(7), continuousRunning(4), continuousRunning(5)], maxJobs: 2, maxChurn: 1)
        #expect(stopped(plan) == ["4"])
        #expect(running(pass(plan.jobs, maxJobs: 1, maxChurn: 1)) == ["7"])
    }

    @Test func theJobStartedLongestAgoStartsFirst() {
        let one = pass([continuous(7), continuous(2), continuous(5)], maxJobs: 1)
        #expect(running(one) == ["2"])
        // With max_jobs 2 the pass rotates: 2 (just started) is stopped, 5 and 7 run.
        #expect(stopped(pass(one.jobs, maxJobs: 2)) == ["2"])
    }

    @Test func jobsChurnEvenIfNotAllSlotsAreTaken() {
        let plan = pass([continuousRunning(7), continuous(2), continuous(5)], maxJobs: 2, maxChurn: 2)
        #expect(stopped(plan) == ["7"])
    }

    @Test func nothingChurnsWhileSlotsAreFree() {
        let plan = pass([continuousRunning(1), continuousRunning(2)], maxJobs: 2, maxChurn: 2)
        #expect(plan.actions.isEmpty)
    }

    @Test func waitingJobsStartIntoFreeSlotsWithoutStoppingOthers() {
        let plan = pass([continuous(1), continuousRunning(2)], maxJobs: 2, maxChurn: 2)
        #expect(plan.actions == [.start("1")])
    }

    @Test func nothingStopsWhenNothingWaits() {
        #expect(pass([continuousRunning(1), continuousRunning(2)], maxJobs: 2).actions.isEmpty)
    }

    @Test func maxChurnLimitsTheJobsRotated() {
        let plan = pass(
            [continuous(1), continuousRunning(2), continuous(3), continuousRunning(4)], maxJobs: 2, maxChurn: 1)
        #expect(stopped(plan) == ["2", "3"])
        #expect(plan.actions == [.stop("2"), .start("1")])
    }

    @Test func fewerWaitingThanRunningStartsAllWaiting() {
        let jobs = [continuous(1), continuousRunning(2), continuous(3), continuousRunning(4), continuousRunning(5)]
        #expect(running(pass(jobs, maxJobs: 3)) == ["1", "2", "5"])
    }

    @Test func moreWaitingThanRunningSwapsAllRunning() {
        let jobs = [continuous(1), continuous(2), continuous(3), continuousRunning(4), continuousRunning(5)]
        #expect(stopped(pass(jobs, maxJobs: 2)) == ["3", "4", "5"])
    }

    @Test func oneShotJobsAreNotRotatedOut() {
        #expect(running(pass([oneshotRunning(1), continuous(2)], maxJobs: 1)) == ["1"])
    }

    @Test func onlyContinuousJobsRotateAmongMixedOnes() {
        #expect(running(pass([continuous(1), oneshotRunning(2), continuousRunning(3)], maxJobs: 2)) == ["1", "2"])
    }

    @Test func oneShotJobsGetNoStartingPriority() {
        #expect(running(pass([continuous(1), oneshot(2), continuousRunning(3)], maxJobs: 1)) == ["1"])
    }

    @Test func oneShotJobsCanHogTheScheduler() {
        let jobs = [oneshotRunning(1), oneshotRunning(2), oneshot(3), continuous(4)]
        #expect(running(pass(jobs, maxJobs: 2)) == ["1", "2"])
    }

    @Test func rotationStillHappensAfterTheExcessIsTrimmed() {
        let plan = pass([continuous(1), continuousRunning(2), continuousRunning(3)], maxJobs: 1)
        #expect(running(plan) == ["1"])
        // Each decision is recorded where the next step of the pass reads it.
        #expect(plan.jobs.first { $0.id == "2" }?.history.events.first?.kind == .stopped)
        #expect(plan.jobs.first { $0.id == "1" }?.history.events.first?.kind == .started)
        #expect(plan.jobs.first { $0.id == "1" }?.history.events.first?.time == now)
    }

    @Test func aJobStoppedForExcessMayStartAgainInTheSamePass() {
        // max_jobs 1 over two running jobs: 1 (older) goes for excess, 2 for the rotation, and 1 (started longest
        // ago) comes back; the actions keep that order, so a run is stopped before its next one starts.
        let plan = pass([continuousRunning(1), continuousRunning(2)], maxJobs: 1)
        #expect(plan.actions == [.stop("1"), .stop("2"), .start("1")])
    }

    // MARK: crashed jobs

    /// A waiting job that crashed `ago` seconds before `now`, after `crashes` consecutive crashes.
    private func crashing(_ n: Int, crashes: Int, ago: TimeInterval) -> SchedulerPlan.Job {
        var history = SchedulerHistory(added: Self.epoch)
        for k in 0..<crashes {
            let at = now - ago - Double(crashes - 1 - k) * 2
            history.record(.started, at: at - 1)
            history.record(.crashed, reason: "db_not_found: could not open x", at: at)
        }
        return SchedulerPlan.Job(id: "\(n)", continuous: true, running: false, history: history)
    }

    @Test func aJobThatCrashedRecentlyWaitsOutItsBackoff() {
        // One crash 10 s ago: the pause is 30 s. The job after it in line starts instead.
        let plan = pass([crashing(1, crashes: 1, ago: 10), oneshot(2), oneshot(3)], maxJobs: 1)
        #expect(running(plan) == ["2"])
        #expect(pass([crashing(1, crashes: 1, ago: 10)], maxJobs: 5).actions.isEmpty)
    }

    @Test func aCrashedJobStartsOnceItsBackoffHasPassed() {
        #expect(running(pass([crashing(1, crashes: 1, ago: 31)], maxJobs: 5)) == ["1"])
        // Three consecutive crashes: 120 s.
        #expect(running(pass([crashing(1, crashes: 3, ago: 100)], maxJobs: 5)) == [])
        #expect(running(pass([crashing(1, crashes: 3, ago: 121)], maxJobs: 5)) == ["1"])
    }

    @Test func theNextRetryIsTheEarliestEndOfAPause() {
        let plan = plan(
            [crashing(1, crashes: 1, ago: 10), crashing(2, crashes: 3, ago: 10), continuous(3)], maxJobs: 5)
        #expect(plan.nextRetry == now + 20)
        #expect(self.plan([continuous(3)], maxJobs: 5).nextRetry == nil)
    }

    @Test func startPendingFillsFreeSlotsAndStopsNothing() {
        var plan = plan(
            [continuousRunning(1), continuous(2), continuous(3), crashing(4, crashes: 1, ago: 1)], maxJobs: 3)
        plan.startPending()
        #expect(plan.actions == [.start("2"), .start("3")])
        var full = self.plan([continuousRunning(1), continuous(2)], maxJobs: 1)
        full.startPending()
        #expect(full.actions.isEmpty)
    }

    // MARK: hostile limits and sizes

    @Test func aNegativeMaxJobsStopsEverythingAndStartsNothing() {
        let plan = pass([continuousRunning(1), oneshotRunning(2), continuous(3)], maxJobs: -5, maxChurn: -3)
        #expect(plan.runningCount == 0)
        #expect(!plan.actions.contains { if case .start = $0 { true } else { false } })
    }

    @Test func aNegativeChurnRotatesNothing() {
        let plan = pass([continuousRunning(1), continuous(2)], maxJobs: 1, maxChurn: -1)
        #expect(plan.actions.isEmpty)
    }

    @Test func tenThousandDocumentsStartOnlyMaxJobs() {
        let jobs = (0..<10_000).map { n in
            SchedulerPlan.Job(
                id: String(n), continuous: n % 2 == 0, running: false, history: SchedulerHistory(added: Self.epoch))
        }
        let plan = pass(jobs, maxJobs: 500)
        #expect(plan.runningCount == 500 && plan.actions.count == 500)
        // The next pass rotates max_churn continuous jobs out and as many waiting ones in.
        let next = pass(plan.jobs, maxJobs: 500)
        #expect(next.runningCount == 500)
        #expect(next.actions.count { if case .stop = $0 { true } else { false } } == 20)
    }
}
