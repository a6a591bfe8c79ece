import Callbacks
import Dispatch
import Synchronization
import Testing

/// `CallbackSlot`: a closure kept behind a lock costs the same on its millionth call as on its first.
@Suite struct CallbackSlotTests {
    static let million = 1_000_000

    @Test func aMillionCallsWithArgumentsRunAtOneDepth() {
        let slot = CallbackSlot<(String, Int)>()
        let depth = StackDepthRecorder()
        let sum = Mutex(0)
        slot.set { _, number in
            depth.record()
            sum.withLock { $0 += number & 1 }
        }
        for number in 0..<Self.million { slot(("db", number)) }
        #expect(depth.calls == Self.million)
        #expect(depth.span == 0)
        #expect(sum.withLock { $0 } == Self.million / 2)
    }

    @Test func aMillionCallsWithoutArgumentsRunAtOneDepth() {
        let slot = CallbackSlot<Void>()
        let depth = StackDepthRecorder()
        slot.set { depth.record() }
        for _ in 0..<Self.million { #expect(slot(), "set slot must run") }
        #expect(depth.calls == Self.million)
        #expect(depth.span == 0)
    }

    /// The shape that overflowed the stack at the 6,361st database event, kept here as the control: the same loop
    /// through `Mutex<closure?>` gets deeper with every call (so the recorder can see growth).
    @Test func theMutexHeldClosureItReplacesGrowsWithEveryCall() {
        let held = Mutex<(@Sendable () -> Void)?>(nil)  // check-stored-closures: control
        let depth = StackDepthRecorder()
        held.withLock { $0 = { depth.record() } }
        for _ in 0..<2_000 { held.withLock { $0 }?() }
        #expect(depth.calls == 2_000)
        #expect(depth.span > 2_000 * 16, "the control no longer grows: \(depth.span) bytes")
    }

    @Test func anEmptySlotRunsNothingAndSaysSo() {
        let slot = CallbackSlot<Int32>()
        #expect(!slot.isSet)
        #expect(!slot(15))
        let seen = Mutex<[Int32]>([])
        slot.set { number in seen.withLock { $0.append(number) } }
        #expect(slot.isSet)
        #expect(slot(2))
        slot.set(nil)
        #expect(!slot(3))
        #expect(seen.withLock { $0 } == [2])
    }

    /// Callers on many threads while another replaces the callback: every call runs exactly one of the callbacks,
    /// and a callback that sets the slot from inside itself does not deadlock (it runs outside the lock).
    @Test func replacingWhileOthersCallLosesNoCall() {
        let slot = CallbackSlot<Void>()
        let first = Atomic<Int>(0)
        let second = Atomic<Int>(0)
        slot.set { first.wrappingAdd(1, ordering: .relaxed) }
        let callsPerThread = 50_000
        DispatchQueue.concurrentPerform(iterations: 5) { thread in
            if thread == 0 {
                for round in 0..<1_000 {
                    if round % 2 == 0 {
                        slot.set { second.wrappingAdd(1, ordering: .relaxed) }
                    } else {
                        slot.set { first.wrappingAdd(1, ordering: .relaxed) }
                    }
                }
            } else {
                for _ in 0..<callsPerThread { slot() }
            }
        }
        #expect(first.load(ordering: .relaxed) + second.load(ordering: .relaxed) == 4 * callsPerThread)
        let reentrant = CallbackSlot<Void>()
        reentrant.set { reentrant.set(nil) }
        #expect(reentrant())
        #expect(!reentrant.isSet)
    }
}
