import Synchronization

/// A fixed number of `Int` counters updated with relaxed atomics: statistics that request threads
/// bump without a lock (an `Atomic` cannot live in an `Array`, so they sit in one allocation).
///
/// `@unchecked Sendable`: the pointer is written only through `Atomic` operations and freed in `deinit`.
final class AtomicCounters: @unchecked Sendable {
    let count: Int
    private let slots: UnsafeMutablePointer<Atomic<Int>>

    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: max(count, 1))
        for index in 0..<count { (slots + index).initialize(to: Atomic(0)) }
    }

    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
    }

    /// The counter at `index` (which must be in `0..<count`).
    package subscript(index: Int) -> Int { slots[index].load(ordering: .relaxed) }

    package func add(_ index: Int, _ amount: Int = 1) { slots[index].add(amount, ordering: .relaxed) }

    package func store(_ index: Int, _ value: Int) { slots[index].store(value, ordering: .relaxed) }

    /// Sets the counter to `desired` if it still holds `expected`; false if another thread changed it first.
    func compareExchange(_ index: Int, expected: Int, desired: Int) -> Bool {
        slots[index].compareExchange(expected: expected, desired: desired, ordering: .acquiringAndReleasing).exchanged
    }
}
