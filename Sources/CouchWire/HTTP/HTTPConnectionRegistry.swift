import Foundation

/// The server's shared state: lifecycle, listening sockets and the open connections.
///
/// `@unchecked Sendable` is safe because every stored property is read and written only while holding
/// `condition` (an `NSCondition`), which is also what `waitUntilStopped` and `shutdown` wait on.
final class HTTPConnectionRegistry: @unchecked Sendable {
    enum Lifecycle { case created, running, shuttingDown, stopped }

    private struct Entry {
        let socket: HTTPSocket
        var busy: Bool
        /// The client's address when it counts towards `maxPerAddress` (nil for loopback or unknown).
        let address: String?
        /// When the connection last became idle (accepted, or finished a request).
        var idleSince: HTTPDeadline
        /// The request being served and since when, while busy: what a shutdown says it cut.
        var request: HTTPCutRequest?
        /// Upgraded to a WebSocket: at shutdown its reading is ended (not the whole socket), so the channel wakes and
        /// says CLOSE 1001 before the connection goes.
        var upgraded = false
    }

    private let condition = NSCondition()
    private var lifecycle = Lifecycle.created
    private var entries: [Int: Entry] = [:]
    private var nextID = 0
    private var acceptThreadRunning = false
    private let maxConnections: Int
    private let maxPerAddress: Int
    private let crowdedIdle: Duration
    /// Open connections per counted client address.
    private var perAddress: [String: Int] = [:]
    private var lastSweep = HTTPDeadline(nanoseconds: 0)

    /// Whether loopback clients count towards `maxPerAddress` (tests only).
    private let countsLoopback: Bool

    init(
        maxConnections: Int, maxPerAddress: Int = 0, crowdedIdle: Duration = .seconds(5), countsLoopback: Bool = false
    ) {
        self.maxConnections = maxConnections
        self.maxPerAddress = maxPerAddress
        self.crowdedIdle = crowdedIdle
        self.countsLoopback = countsLoopback
    }

    /// Whether more than three quarters of the slots are taken (idle connections then yield quickly).
    var isCrowded: Bool { locked { crowded } }

    private var crowded: Bool { entries.count > maxConnections - maxConnections / 4 }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// Moves from `created` to `running`; false if already started or stopped.
    func markRunning() -> Bool {
        locked {
            guard lifecycle == .created else { return false }
            lifecycle = .running
            acceptThreadRunning = true
            return true
        }
    }

    var isShuttingDown: Bool { locked { lifecycle != .running } }

    var openConnections: Int { locked { entries.count } }

    /// Registers a new connection; nil when over the cap (total, or for its address) or shutting down
    /// (the caller refuses it).
    func register(_ socket: HTTPSocket, address: String? = nil) -> Int? {
        locked {
            guard lifecycle == .running else { return nil }
            if crowded { closeLongIdle() }
            guard entries.count < maxConnections else { return nil }
            let counted =
                maxPerAddress > 0
                ? address.flatMap { !countsLoopback && HTTPConnectionRegistry.isLoopback($0) ? nil : $0 } : nil
            if let counted {
                let open = perAddress[counted, default: 0]
                guard open < maxPerAddress else { return nil }
                perAddress[counted] = open + 1
            }
            nextID += 1
            entries[nextID] = Entry(socket: socket, busy: false, address: counted, idleSince: .now())
            return nextID
        }
    }

    /// With the lock held, when crowded: shuts down connections idle longer than `crowdedIdle` and frees
    /// their slots at once (their threads see the end of the stream and close; `removeAndClose` then finds
    /// them gone), so the connection being accepted can have one. At most once every 100 ms.
    private func closeLongIdle() {
        let now = HTTPDeadline.now()
        guard now.nanoseconds >= lastSweep.nanoseconds &+ 100_000_000 else { return }
        lastSweep = now
        let cutoff = now.nanoseconds &- min(now.nanoseconds, crowdedIdle.clampedNanoseconds)
        for (id, entry) in entries where !entry.busy && entry.idleSince.nanoseconds <= cutoff {
            entry.socket.shutdown()
            release(id)
        }
    }

    /// Forgets a connection's slot and its address's count (once, whoever calls first).
    private func release(_ id: Int) {
        guard let address = entries.removeValue(forKey: id)?.address else { return }
        let left = perAddress[address, default: 1] - 1
        perAddress[address] = left > 0 ? left : nil
    }

    /// 127.0.0.0/8, ::1 and their IPv4-mapped forms.
    static func isLoopback(_ address: String) -> Bool {
        address == "::1" || address.hasPrefix("127.") || address.hasPrefix("::ffff:127.")
    }

    /// Marks a connection as serving a request (named for the shutdown's report); shutdown waits for busy
    /// connections.
    func markBusy(_ id: Int, method: String = "", path: String = "", client: String? = nil) {
        locked {
            entries[id]?.busy = true
            entries[id]?.request = HTTPCutRequest(method: method, path: path, client: client, started: .now)
        }
    }

    /// Marks a busy connection as upgraded to a WebSocket; when the server is already shutting down its reading
    /// ends at once.
    func markUpgraded(_ id: Int) {
        locked {
            entries[id]?.upgraded = true
            if lifecycle != .running { entries[id]?.socket.shutdownRead() }
        }
    }

    /// Marks a connection as idle between requests. Returns false when shutting down: the caller must close.
    func markIdle(_ id: Int) -> Bool {
        locked {
            entries[id]?.busy = false
            entries[id]?.request = nil
            entries[id]?.idleSince = .now()
            condition.broadcast()
            if lifecycle != .running {
                return false
            }
            return true
        }
    }

    /// Forgets the connection and closes its descriptor while holding the lock, so that a concurrent
    /// `shutdown` never touches a reused descriptor number.
    func removeAndClose(_ id: Int, socket: HTTPSocket) {
        locked {
            release(id)
            close(socket.descriptor)
            condition.broadcast()
            markStoppedIfDone()
        }
    }

    /// Called by the accept thread as it exits.
    func acceptThreadExited() {
        locked {
            acceptThreadRunning = false
            condition.broadcast()
            markStoppedIfDone()
        }
    }

    /// Stops new work: marks shutting down and wakes idle connections so they close.
    /// Returns false if the server was not running.
    func beginShutdown() -> Bool {
        locked {
            switch lifecycle {
            case .created:
                lifecycle = .stopped
                condition.broadcast()
                return false
            case .running:
                lifecycle = .shuttingDown
                for entry in entries.values where !entry.busy { entry.socket.shutdown() }
                for entry in entries.values where entry.upgraded { entry.socket.shutdownRead() }
                return true
            case .shuttingDown, .stopped:
                return false
            }
        }
    }

    /// Waits until no connection is busy or `deadline` passes; idle ones that appear meanwhile are woken.
    func waitForBusyConnections(until deadline: Date) {
        locked {
            while true {
                for entry in entries.values where !entry.busy { entry.socket.shutdown() }
                if !entries.values.contains(where: \.busy) { return }
                if !condition.wait(until: deadline) { return }
            }
        }
    }

    /// Shuts every remaining socket down, so blocked reads and writes fail and their threads finish.
    /// - Returns: the requests that were still being served, longest-running first.
    @discardableResult
    func shutdownAllSockets() -> [HTTPCutRequest] {
        locked {
            var cut: [HTTPCutRequest] = []
            for entry in entries.values {
                entry.socket.shutdown()
                if entry.busy, let request = entry.request { cut.append(request) }
            }
            return cut.sorted { $0.started < $1.started }
        }
    }

    /// Connection threads not yet ended.
    var remainingConnections: Int { locked { entries.count } }

    /// Waits until the accept thread and every connection thread are gone (or `deadline` passes);
    /// once they are, marks the server stopped.
    func waitForAllThreads(until deadline: Date?) {
        locked {
            while acceptThreadRunning || !entries.isEmpty {
                if let deadline {
                    if !condition.wait(until: deadline) { break }
                } else {
                    condition.wait()
                }
            }
            markStoppedIfDone()
        }
    }

    /// Called with the lock held whenever a thread leaves.
    private func markStoppedIfDone() {
        if lifecycle == .shuttingDown, !acceptThreadRunning, entries.isEmpty {
            lifecycle = .stopped
            condition.broadcast()
        }
    }

    /// Blocks until the lifecycle reaches `stopped`.
    func waitUntilStopped() {
        locked {
            while lifecycle != .stopped { condition.wait() }
        }
    }
}

/// A request a shutdown stopped waiting for: its socket was shut down while its handler still ran.
public struct HTTPCutRequest: Sendable {
    public let method: String
    public let path: String
    /// The client's address, when known.
    public let client: String?
    /// When it started being served.
    public let started: ContinuousClock.Instant
}
