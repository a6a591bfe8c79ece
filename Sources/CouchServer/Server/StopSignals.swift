import Callbacks
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// SIGINT and SIGTERM, taken by one thread that waits for them with `sigwait`.
///
/// A command blocks both in its first thread before it starts any other, so every thread it ever starts inherits
/// the block: the kernel then keeps a stop signal pending for the process until the waiting thread takes it, and
/// none is lost, whichever thread happened to be running. Dispatch signal sources lost some: libdispatch replaces
/// the disposition with a handler that sends the signal on to the thread that registered the source, which is
/// not always the thread that reads its signalfd, and about one SIGTERM in twenty left `couchlite serve` running
/// (2 of 40 in a loop of starts and stops; `conformance/e2e/test_server_process.py` has the tests).
///
/// Until a command says what a stop means (`onStop`), a stop signal does what it does by default: it ends the
/// process. Commands that want no such thread (the query-server workers) never call `start`.
public enum StopSignals {
    /// The signals that ask a command to stop.
    static let numbers: [Int32] = [SIGINT, SIGTERM]
    private static let handler = CallbackSlot<Int32>()
    private static let started = Atomic<Bool>(false)

    /// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread started after it, and starts the
    /// thread that waits for them. Call it first thing, before anything starts a thread; a second call does nothing.
    public static func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let waiter = Thread { waitForever() }
        waiter.name = "couchlite.signals"
        waiter.stackSize = 256 << 10
        waiter.start()
    }

    /// From now on each SIGINT or SIGTERM calls `handle` with the signal's number, on the waiting thread, one at a
    /// time. A handle that blocks delays the signals after it; those stay pending meanwhile, where two of one kind
    /// count as one, as the kernel keeps them.
    package static func onStop(_ handle: @escaping @Sendable (Int32) -> Void) {
        handler.set(handle)
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in numbers { sigaddset(&set, number) }
        return set
    }

    private static func waitForever() {
        var set = signalSet()
        while true {
            var number: Int32 = 0
            guard sigwait(&set, &number) == 0 else { continue }
            deliver(number)
        }
    }

    /// Runs the handler `onStop` set for a signal taken, or ends the process as the signal would have.
    package static func deliver(_ number: Int32) {
        if !handler(number) { endByDefault(number) }
    }

    /// What the signal would have done unblocked: the process ends by it (its parent sees it killed by that signal).
    private static func endByDefault(_ number: Int32) -> Never {
        signal(number, SIG_DFL)
        var only = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, number)
        pthread_sigmask(SIG_UNBLOCK, &only, nil)
        raise(number)
        _exit(128 + number)  // not reached: the default action of both signals ends the process
    }
}
