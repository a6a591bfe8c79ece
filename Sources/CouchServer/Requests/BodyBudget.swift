import CouchWire
import Foundation
import Synchronization

/// The server-wide bound on the memory of JSON bodies being read and parsed at once.
///
/// A request that reads a JSON body first reserves what that body may cost: its bytes plus what the parser may make
/// of them (``JSON/memoryBudget(forInput:)``, under 4 times the size for big bodies). Reservations together stay
/// within ``capacity``; one that does not fit waits (at most ``maxWait``, the others finishing) and is then answered
/// 503 `service_unavailable`, which replicators retry. A body that alone needs more than the whole capacity is let
/// through only while no other body is reserved, so the largest allowed bodies still work, one at a time.
/// A request's reservation is released when the request ends (``BodyReservation``).
package final class BodyBudget: Sendable {
    /// The budget every request shares: a quarter of the machine's memory, between 256 MiB and 1 GiB.
    package static let shared = BodyBudget(capacity: BodyBudget.defaultCapacity)

    package static var defaultCapacity: Int {
        let quarter = Int(clamping: ProcessInfo.processInfo.physicalMemory / 4)
        return min(max(quarter, 256 << 20), 1 << 30)
    }

    /// Most bytes reserved at once (but see the type's note on one body bigger than this).
    package let capacity: Int
    /// How long a reservation waits for room before the request is answered 503.
    package let maxWait: Duration
    private let reserved = Mutex(0)

    package init(capacity: Int, maxWait: Duration = .seconds(5)) {
        self.capacity = capacity
        self.maxWait = maxWait
    }

    /// Bytes reserved now.
    package var inUse: Int { reserved.withLock { $0 } }

    /// Takes `bytes` more when they fit (or when nothing else is reserved); false otherwise.
    private func tryTake(_ bytes: Int, holding: Int) -> Bool {
        reserved.withLock { total in
            let (sum, overflow) = total.addingReportingOverflow(bytes)
            guard (!overflow && sum <= capacity) || total == holding else { return false }
            total = overflow ? Int.max : sum
            return true
        }
    }

    /// Takes `bytes` more for a request already holding `holding`, waiting up to ``maxWait`` for room.
    /// - Throws: 503 `service_unavailable` when no room came in time.
    func take(_ bytes: Int, holding: Int) throws(CouchError) {
        guard bytes > 0 else { return }
        let deadline = ContinuousClock.now + maxWait
        while !tryTake(bytes, holding: holding) {
            guard ContinuousClock.now < deadline else {
                throw .serviceUnavailable("The server is busy reading other request bodies; retry later.")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    func give(_ bytes: Int) {
        reserved.withLock { $0 &-= bytes }
    }
}

/// What one request holds of a ``BodyBudget``; given back when the request (so this object) goes.
package final class BodyReservation {
    let budget: BodyBudget
    /// Bytes held.
    package private(set) var bytes = 0

    package init(_ budget: BodyBudget = .shared) {
        self.budget = budget
    }

    /// Makes sure the request holds room for a body of `bodyBytes` bytes and its parse.
    /// - Throws: 503 when the server's budget has no room in time.
    package func cover(bodyBytes: Int) throws(CouchError) {
        let (sum, overflow) = max(bodyBytes, 0).addingReportingOverflow(JSON.memoryBudget(forInput: bodyBytes))
        let needed = overflow ? Int.max : sum
        guard needed > bytes else { return }
        try budget.take(needed &- bytes, holding: bytes)
        bytes = needed
    }

    deinit {
        budget.give(bytes)
    }
}
