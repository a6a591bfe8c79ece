import Synchronization

/// The databases whose `_compact` is running, so `GET /db` reports `compact_running` truly: client libraries
/// poll it after `POST /db/_compact` and read the compacted state as soon as it turns false.
package final class Compactions: Sendable {
    private let running = Mutex<[String: Int]>([:])

    /// Marks a compaction of `name` as started (before its thread runs, so the 202's next poll already sees it).
    package func begin(_ name: String) {
        running.withLock { $0[name, default: 0] += 1 }
    }

    /// Marks one compaction of `name` as finished, its effects (bodies dropped, blobs swept) complete.
    func end(_ name: String) {
        running.withLock { state in
            let left = (state[name] ?? 1) - 1
            state[name] = left > 0 ? left : nil
        }
    }

    func isRunning(_ name: String) -> Bool {
        running.withLock { $0[name] != nil }
    }
}
