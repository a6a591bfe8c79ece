import Synchronization

/// Where the `_replicator` database's jobs are, once `ServerProcess` has started following it (nil before, and in
/// an app that never follows it, as `LocalApp`'s). A reference, so the app and the handlers that report the jobs'
/// states (`_scheduler/docs`, `_stats`) share one.
final class ReplicatorDatabaseSlot: Sendable {
    private let current = Mutex<ReplicatorDatabase?>(nil)

    /// Reads or replaces the database under the lock.
    func withLock<Result: Sendable>(_ body: (inout ReplicatorDatabase?) -> Result) -> Result {
        current.withLock { body(&$0) }
    }

    /// Every `_replicator` document the server has seen, with its state, by id (none before it follows the
    /// database).
    var states: [(String, ReplicatorDocState)] { withLock { $0 }?.states ?? [] }

    /// Every scheduled job's state, the continuous `_replicate` ones' under `ReplicatorDatabase.transientKey`.
    var jobStates: [(String, ReplicatorDocState)] { withLock { $0 }?.jobStates ?? [] }

    /// The scheduler of `_replicate` jobs, once the server follows `_replicator` (nil before, and in an app that
    /// never does: such a job then simply runs).
    var scheduler: ReplicatorDatabase? { withLock { $0 } }
}
