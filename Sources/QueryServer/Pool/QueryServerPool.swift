import CouchWire
import Foundation
import Synchronization

/// How the server runs its JavaScript workers.
public struct QueryServerConfiguration: Sendable {
    /// The `couchlite` executable the workers are started from (`/proc/self/exe` by default).
    public var executable: String
    /// Most workers alive at once; a call waits for a free one (as long as its timeout allows).
    public var maxWorkers: Int
    /// Longest one call (one batch) may run before its worker is killed (CouchDB's `os_process_timeout`).
    public var timeout: Duration
    public var limits: WorkerLimits
    /// Largest message either side accepts.
    public var maxPayload: Int
    /// Calls after which a worker is retired and replaced (bounds what a long-lived heap accumulates).
    public var maxCallsPerWorker: Int
    /// The hidden subcommand a worker is started with: `query-server`, or `media-worker` for the media sandbox's
    /// pool (MediaSandbox), which reuses this pool, its limits and its kill-and-replace.
    public var subcommand = "query-server"
    /// Whether each worker gets a descriptor channel (its descriptor 3, a Unix socket) on which a call can hand it
    /// an open file (`WorkerProcess.call(_:passing:...)`): the media sandbox's, whose workers have no file system.
    public var passesDescriptors = false

    public init(
        executable: String = QueryServerConfiguration.currentExecutable, maxWorkers: Int = 4,
        timeout: Duration = .seconds(5), limits: WorkerLimits = WorkerLimits(),
        maxPayload: Int = Frame.defaultMaxPayload,
        maxCallsPerWorker: Int = 100_000
    ) {
        self.executable = executable
        self.maxWorkers = max(1, maxWorkers)
        self.timeout = timeout
        self.limits = limits
        self.maxPayload = maxPayload
        self.maxCallsPerWorker = maxCallsPerWorker
    }

    /// This process's own executable, resolved once (a replaced binary on disk is not what runs); in a test bundle,
    /// which would run its tests rather than serve as a worker, the `couchlite` SwiftPM builds beside it.
    public static let currentExecutable: String = {
        let current =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        guard current.hasSuffix(".xctest") else { return current }
        return (current as NSString).deletingLastPathComponent + "/couchlite"
    }()
}

/// A small pool of query-server worker processes. A call takes an idle worker (or starts one, up to
/// `maxWorkers`, or waits for one), sends its request, and returns the worker unless anything went wrong, in
/// which case the worker has been killed and a fresh one is started on the next call. Thread-safe.
package final class QueryServerPool: Sendable {
    package let configuration: QueryServerConfiguration
    private let state = Mutex(State())
    private let available = NSCondition()

    private struct State {
        var idle: [WorkerProcess] = []
        var alive = 0
        var started = 0
        /// Workers checked out, by the database they run for (its name's bytes).
        var held: [[UInt8]: Int] = [:]
    }

    package init(_ configuration: QueryServerConfiguration) {
        self.configuration = configuration
    }

    deinit {
        state.withLock { state in
            for worker in state.idle { worker.kill() }
            state.idle.removeAll()
        }
    }

    /// Workers started since the pool was made (a test sees a killed worker replaced).
    package var workersStarted: Int { state.withLock { $0.started } }

    var idlePIDs: [Int32] { state.withLock { $0.idle.map(\.pid) } }

    /// Runs `body` with a worker for at most the configured timeout.
    package func withWorker<T>(_ body: (WorkerProcess, ContinuousClock.Instant) throws(QueryServerError) -> T)
        throws(QueryServerError) -> T
    {
        let deadline = ContinuousClock.now + configuration.timeout
        let worker = try checkOut(deadline: deadline)
        do {
            let result = try body(worker, deadline)
            checkIn(worker)
            return result
        } catch {
            checkIn(worker)
            throw error
        }
    }

    private enum Claim {
        case idle(WorkerProcess)
        case start
        case wait
    }

    /// A worker for the caller alone until `checkIn` (`withWorker` does both; a list holds one for its rows).
    /// - Parameter owner: The database a list holds the worker for, the whole request long: the lists of one
    ///   database hold at most all workers but one (with more than one), so they cannot make every other database's
    ///   writes wait out their timeout for a worker. Nil for a single call, which its timeout keeps short.
    func checkOut(deadline: ContinuousClock.Instant, for owner: [UInt8]? = nil) throws(QueryServerError)
        -> WorkerProcess
    {
        let share = configuration.maxWorkers > 1 ? configuration.maxWorkers - 1 : 1
        while true {
            // The claim is decided under the condition's lock, so a check-in between it and `wait` still wakes us.
            available.lock()
            let claim: Claim = state.withLock { state in
                if let owner, state.held[owner, default: 0] >= share { return .wait }
                let claim: Claim
                if let worker = state.idle.popLast() {
                    claim = .idle(worker)
                } else if state.alive < configuration.maxWorkers {
                    state.alive += 1
                    state.started += 1
                    claim = .start
                } else {
                    return .wait
                }
                if let owner { state.held[owner, default: 0] += 1 }
                return claim
            }
            if case .wait = claim {
                let signalled = available.wait(until: Date() + (deadline - ContinuousClock.now).timeInterval)
                available.unlock()
                if !signalled && ContinuousClock.now >= deadline {
                    throw .timeout(seconds: configuration.timeout.timeInterval)
                }
                continue
            }
            available.unlock()
            switch claim {
            case .idle(let worker):
                // A worker that died while idle (killed from outside) is not this call's failure: take another.
                guard worker.hasExited() else {
                    worker.owner = owner
                    return worker
                }
                worker.kill()
                unhold(owner)
                release()
            case .start:
                do {
                    let worker = try WorkerProcess(
                        executable: configuration.executable, subcommand: configuration.subcommand,
                        limits: configuration.limits, maxPayload: configuration.maxPayload,
                        passesDescriptors: configuration.passesDescriptors)
                    worker.owner = owner
                    return worker
                } catch {
                    unhold(owner)
                    release()
                    throw error
                }
            case .wait:
                continue
            }
        }
    }

    func checkIn(_ worker: WorkerProcess) {
        unhold(worker.owner)
        worker.owner = nil
        if worker.isDead || worker.calls >= configuration.maxCallsPerWorker {
            worker.kill()
            release()
            return
        }
        state.withLock { $0.idle.append(worker) }
        signal()
    }

    /// Counts a worker of `owner` as given back.
    private func unhold(_ owner: [UInt8]?) {
        guard let owner else { return }
        state.withLock { state in
            let left = state.held[owner, default: 0] - 1
            state.held[owner] = left > 0 ? left : nil
        }
    }

    private func release() {
        state.withLock { $0.alive -= 1 }
        signal()
    }

    private func signal() {
        // Every waiter: one whose database is at its share cannot take the worker, and must not swallow the wakeup.
        available.lock()
        available.broadcast()
        available.unlock()
    }
}
