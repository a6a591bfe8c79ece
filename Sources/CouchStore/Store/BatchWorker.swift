import Dispatch
import Foundation
import Synchronization

/// A thread that handles queued items in batches: each time it wakes it takes everything queued since it last
/// looked, so callers that arrive while a batch is being handled share the next one (group commit).
///
/// The thread exists only while there is work: the first item queued starts it, and it ends after `idleTimeout`
/// with nothing queued. Every open database has two of these (writer, checkpointer), so an idle
/// database holds no thread, however many are open (up to `Store.defaultMaxOpenDatabases`, 500).
final class BatchWorker<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var closed = false
        /// A thread is handling items or waiting for more; only it sets this back to false, with nothing queued.
        var running = false
    }

    private let name: String
    private let idleTimeout: DispatchTimeInterval
    private let handle: @Sendable ([Item]) -> Void
    private let whenIdle: @Sendable () -> Void
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// `handle` runs on the worker's thread, once per batch, never concurrently with itself. `whenIdle` runs on
    /// that thread too, after `idleTimeout` with nothing queued and before the thread ends, so it may use what
    /// `handle` uses (a batch queued meanwhile waits for it, then runs on the same thread).
    init(
        name: String, idleTimeout: DispatchTimeInterval = .seconds(10),
        whenIdle: @escaping @Sendable () -> Void = {},
        handle: @escaping @Sendable ([Item]) -> Void
    ) {
        self.name = name
        self.idleTimeout = idleTimeout
        self.whenIdle = whenIdle
        self.handle = handle
    }

    /// Whether a thread is running now (tests check that an idle worker holds none).
    var hasThread: Bool { state.withLock { $0.running } }

    /// Queues `item` for the next batch, starting the thread if none runs.
    /// - Returns: false, queuing nothing, once `close` has been called.
    func enqueue(_ item: Item) -> Bool {
        let outcome = state.withLock { state -> EnqueueOutcome in
            guard !state.closed else { return .refused }
            state.items.append(item)
            if state.running { return .queued }
            state.running = true
            return .start
        }
        switch outcome {
        case .refused: return false
        case .queued: wake.signal()
        case .start:
            let thread = Thread { [self] in run() }
            thread.name = name
            thread.start()
        }
        return true
    }

    /// Handles what is queued, stops the thread and waits for it. Later calls return at once.
    func close() {
        let (first, running) = state.withLock { state -> (Bool, Bool) in
            defer { state.closed = true }
            return (!state.closed, state.running)
        }
        // Not running means nothing is queued either: items are only ever queued with a thread to take them.
        guard first, running else { return }
        wake.signal()
        finished.wait()
    }

    private enum EnqueueOutcome { case refused, queued, start }

    private func run() {
        while true {
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
            // A wake-up may be stale (its item was taken with an earlier batch): the loop then finds nothing.
            if wake.wait(timeout: .now() + idleTimeout) == .timedOut {
                // Still marked running, so no other thread can start and handle a batch while this runs.
                whenIdle()
                if endIfIdle() { return }
            }
        }
    }

    /// Ends the thread if nothing is queued and `close` has not begun (which waits for this thread).
    private func endIfIdle() -> Bool {
        state.withLock { state in
            guard state.items.isEmpty, !state.closed else { return false }
            state.running = false
            return true
        }
    }
}
