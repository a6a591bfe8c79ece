import Dispatch
import RevTree
import Synchronization

/// What `GET /_db_updates` reads: the latest event of each kind (`created`, `updated`, `deleted`) of each database,
/// with a server-wide sequence, as CouchDB's global changes feed keeps one row per `kind:name` and moves it to the
/// end when the event happens again. Memory is at most `maxEntries` rows (beyond it the oldest go): a client asking
/// from an older seq than the oldest kept sees the latest events of every database, as a client of CouchDB's
/// feed does.
///
/// Kept in memory: a restart starts the sequence again from the databases that exist (each `created`), so a client
/// that resumes from a seq of a previous run may miss events (it should then read `since=0` again).
final class DatabaseUpdates: Sendable {
    typealias Kind = DatabaseEvent

    struct Event: Sendable, Equatable {
        var name: String
        var kind: Kind
        var seq: Int
    }

    private struct State {
        var seq = 0
        /// Keyed by `kind:name`, as CouchDB's global changes document ids.
        var latest: [String: Event] = [:]
        var waiters: [DispatchSemaphore] = []
    }

    private let state = Mutex(State())
    /// Most events remembered.
    let maxEntries: Int

    init(maxEntries: Int = 100_000) {
        self.maxEntries = max(1, maxEntries)
    }

    /// Starts from the databases of `store` (each `created`) and follows its events from now on.
    convenience init(following store: Store) {
        self.init()
        for name in store.databaseNames() { record(name, .created) }
        store.observe { [weak self] name, event in self?.record(name, event) }
    }

    /// The sequence of the latest event.
    var lastSeq: Int { state.withLock { $0.seq } }

    /// Records that `name` was created, written or deleted, and wakes every waiting feed.
    func record(_ name: String, _ kind: Kind) {
        let waiters = state.withLock { state -> [DispatchSemaphore] in
            state.seq += 1
            state.latest[kind.rawValue + ":" + name] = Event(name: name, kind: kind, seq: state.seq)
            // A tenth more than the bound before trimming, so a trim's sort is paid once per many events.
            if state.latest.count > maxEntries + maxEntries / 10 {
                Self.forgetOldest(&state.latest, keeping: maxEntries)
            }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.signal() }
    }

    /// Drops the oldest entries beyond `count`.
    private static func forgetOldest(_ latest: inout [String: Event], keeping count: Int) {
        let order = latest.sorted { $0.value.seq < $1.value.seq }
        for (key, _) in order.prefix(latest.count - count) { latest[key] = nil }
    }

    /// Events after `since`, in sequence order (reversed when `descending`), at most `limit`.
    func events(after since: Int, descending: Bool = false, limit: Int = Int.max) -> [Event] {
        let all = state.withLock { state in state.latest.values.filter { $0.seq > since } }
        let sorted = all.sorted { descending ? $0.seq > $1.seq : $0.seq < $1.seq }
        return Array(sorted.prefix(max(0, limit)))
    }

    /// Blocks until an event after `seq` or `timeout`; returns the latest seq. Call it off the cooperative pool.
    func wait(after seq: Int, timeout: Duration) -> Int {
        let semaphore = DispatchSemaphore(value: 0)
        let ready = state.withLock { state -> Int? in
            if state.seq > seq { return state.seq }
            state.waiters.append(semaphore)
            return nil
        }
        if let ready { return ready }
        let (seconds, attoseconds) = timeout.components
        let nanos = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
        _ = semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: nanos)))
        return state.withLock { state in
            state.waiters.removeAll { $0 === semaphore }
            return state.seq
        }
    }
}
