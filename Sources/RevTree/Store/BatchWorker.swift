import Dispatch
import Foundation
import Synchronization

/// A thread that handles queued items in batches: each time it wakes it takes everything queued since it last
/// looked, so callers that arrive while a batch is being handled share the next one (group commit).
final class BatchWorker<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var closed = false
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts the thread; `handle` runs on it, once per batch, never concurrently with itself.
    init(name: String, handle: @escaping @Sendable ([Item]) -> Void) {
        let thread = Thread { [self] in run(handle) }
        thread.name = name
        thread.start()
    }

    /// Queues `item` for the next batch.
    /// - Returns: false, queuing nothing, once `close` has been called.
    func enqueue(_ item: Item) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.items.append(item)
            return true
        }
        if accepted { wake.signal() }
        return accepted
    }

    /// Handles what is queued, stops the thread and waits for it. Later calls return at once.
    func close() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        wake.signal()
        finished.wait()
    }

    private func run(_ handle: ([Item]) -> Void) {
        while true {
            wake.wait()
            let (items, closed) = state.withLock { state in
                defer { state.items.removeAll() }
                return (state.items, state.closed)
            }
            if !items.isEmpty { handle(items) }
            if closed {
                // Nothing can be queued after `closed` was set, so what is left now is the last batch.
                let rest = state.withLock { state in
                    defer { state.items.removeAll() }
                    return state.items
                }
                if !rest.isEmpty { handle(rest) }
                finished.signal()
                return
            }
        }
    }
}
