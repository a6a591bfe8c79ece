import Synchronization

/// A callback that one thread may set, replace or clear while others call it: a store's event observer, a stop
/// signal's handler, the server's disk-full notice.
///
/// Why not `Mutex<(@Sendable (A) -> Void)?>`: `Mutex.withLock` hands its value to the closure `inout` at the
/// generic abstraction, so a function value read through it (`withLock { $0 }`) is reabstracted on the way in and
/// again on the way back, and the reabstracted function is what gets stored. Swift 6.3.1 keeps both thunks, so each
/// call left the stored function one thunk pair deeper: the 6,361st database event overflowed a 512 KiB stack. A
/// class reference is never reabstracted, so the function lives in one (`Box`) and every call costs the same
/// (tests call each slot of the project a million times and record its depth with `StackDepthRecorder`; `scripts/check-stored-closures.py` refuses
/// a function type inside a lock anywhere else).
public final class CallbackSlot<Arguments>: Sendable {
    private final class Box: Sendable {
        let call: @Sendable (Arguments) -> Void
        init(_ call: @escaping @Sendable (Arguments) -> Void) { self.call = call }
    }

    private let current = Mutex<Box?>(nil)

    /// An empty slot: calls do nothing until `set`.
    public init() {}

    /// Whether a callback is set now.
    public var isSet: Bool { current.withLock { $0 != nil } }

    /// Sets what later calls run, replacing any callback before it; nil clears the slot.
    public func set(_ call: (@Sendable (Arguments) -> Void)?) {
        let box = call.map(Box.init)
        current.withLock { $0 = box }
    }

    /// Runs the callback set now, on the calling thread and outside the lock (so it may set the slot itself).
    /// - Returns: whether a callback was set and ran.
    @discardableResult
    public func callAsFunction(_ arguments: Arguments) -> Bool {
        guard let box = current.withLock({ $0 }) else { return false }
        box.call(arguments)
        return true
    }
}

/// The stack depths a callback ran at, for tests that show a call chain does not grow: a callback records where
/// its frame is each time it runs, and `span` is the distance between the deepest and the shallowest call. Calls
/// made from one loop at constant cost all run at one depth (a span of zero).
package final class StackDepthRecorder: Sendable {
    private let range = Mutex<(calls: Int, lowest: UInt, highest: UInt)>((0, .max, 0))

    package init() {}

    /// Records the depth of the frame that calls it.
    @inline(never)
    package func record() {
        var local: UInt8 = 0
        let address = withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
        range.withLock { range in
            range.calls += 1
            range.lowest = min(range.lowest, address)
            range.highest = max(range.highest, address)
        }
    }

    /// How many times `record` ran.
    package var calls: Int { range.withLock { $0.calls } }

    /// Bytes between the deepest and the shallowest recorded call (0 before two calls).
    package var span: UInt { range.withLock { $0.calls < 2 ? 0 : $0.highest - $0.lowest } }
}

extension CallbackSlot where Arguments == Void {
    /// Runs the callback set now (see ``callAsFunction(_:)``).
    /// - Returns: whether a callback was set and ran.
    @discardableResult
    public func callAsFunction() -> Bool { self(()) }
}
