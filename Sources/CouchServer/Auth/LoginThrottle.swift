import CouchWire
import Foundation
import Synchronization

/// Slows down password guessing (a client may otherwise try names and passwords at any rate) without locking the real
/// user out.
///
/// Every login attempt (Basic or `POST /_session`) takes a turn on two keys: its client and name,
/// and its client alone. The first `AuthLimits.freeFailures` failures on a (client, name) key (and
/// `freeClientFailures` on a client) within the window cost nothing; after that each attempt must
/// wait for a turn spaced after the previous one, twice as far apart per failure (capped), *before*
/// its password is checked. Turns are handed out when attempts arrive, so guesses sent in parallel
/// queue behind each other instead of all being answered at once, and an attempt whose turn is
/// further away than `failureMaxWaitMilliseconds` is refused without being verified.
///
/// The table is bounded (`AuthLimits.failureEntries`); when it is full the entry with the fewest
/// failures goes, so failures on made-up names (one each, and throttled per client too) cannot push
/// a guessed account's entry out. Keys include the client, so a stranger guessing an account's
/// password slows down only themselves; the account logging in from elsewhere is never delayed.
/// The client is its IPv4 address, or the /64 of an IPv6 one (a host owns a whole /64).
final class LoginThrottle: Sendable {
    private let table = Mutex(LoginThrottleTable())

    /// The keys of one attempt.
    static func keys(client: String?, name: ExactName) -> [LoginThrottleTable.Key] {
        let client = clientKey(client)
        return [
            LoginThrottleTable.Key(client: client, name: name),
            LoginThrottleTable.Key(client: client, name: nil),
        ]
    }

    /// Hands this attempt its turn without waiting for it; it counts as a failure in flight from now on. Call
    /// `finish` exactly once after a non-nil answer.
    /// - Returns: when the attempt may be verified, or nil when it is refused unverified (its turn would be too
    ///   far away).
    func take(_ keys: [LoginThrottleTable.Key]) -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        switch table.withLock({ $0.begin(keys, now: now) }) {
        case .refuse: return nil
        case .proceed(let wait): return now + wait
        }
    }

    /// Sleeps until `turn` (at once when it has passed).
    static func wait(until turn: ContinuousClock.Instant) {
        let wait = turn - ContinuousClock.now
        guard wait > .zero else { return }
        Thread.sleep(forTimeInterval: wait.timeInterval)
    }

    package func finish(_ keys: [LoginThrottleTable.Key], succeeded: Bool) {
        table.withLock { $0.finish(keys, succeeded: succeeded, now: ContinuousClock.now) }
    }

    /// The part of a peer address that identifies one client: IPv4 as is, IPv6 by its /64
    /// (IPv4-mapped IPv6 as the IPv4 address).
    static func clientKey(_ address: String?) -> String {
        guard let address else { return "-" }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard address.contains(":"), inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        return bytes[0..<8].map { String($0, radix: 16) }.joined(separator: ":") + "/64"
    }
}

/// The throttle's bookkeeping as a pure value (times are passed in), so that it can be tested
/// without sleeping.
struct LoginThrottleTable: Sendable {
    struct Key: Hashable, Sendable {
        /// `LoginThrottle.clientKey` of the peer.
        var client: String
        /// nil for the key counting every name from this client.
        package var name: ExactName?
    }

    struct Entry: Sendable {
        /// Failures within the window.
        var failures = 0
        /// Attempts that took a turn and have not finished yet; counted as failures when turns are
        /// handed out, so parallel guesses queue.
        var pending = 0
        /// The earliest time the next throttled attempt may be verified.
        var nextTurn: ContinuousClock.Instant
        var last: ContinuousClock.Instant
    }

    enum Decision: Equatable {
        case proceed(wait: Duration)
        case refuse
    }

    private(set) var entries: [Key: Entry] = [:]
    var capacity = AuthLimits.failureEntries
    var window = Duration.seconds(AuthLimits.failureWindowSeconds)

    static func freeFailures(_ key: Key) -> Int {
        key.name == nil ? AuthLimits.freeClientFailures : AuthLimits.freeFailures
    }

    /// The spacing after the `over`-th throttled attempt (1-based).
    static func spacing(over: Int) -> Duration {
        let shift = min(max(over - 1, 0), 16)
        return .milliseconds(
            min(AuthLimits.failureBaseDelayMilliseconds << shift, AuthLimits.failureMaxDelayMilliseconds))
    }

    /// Hands out a turn on every key (the longest wait wins), or refuses the attempt without
    /// counting it when some key's turn is further away than the longest wait.
    package mutating func begin(_ keys: [Key], now: ContinuousClock.Instant) -> Decision {
        var updated: [(Key, Entry)] = []
        var wait = Duration.zero
        for key in keys {
            var entry = entries[key] ?? Entry(nextTurn: now, last: now)
            if entry.pending == 0 && now - entry.last >= window {
                entry.failures = 0
                entry.nextTurn = now
            }
            let counted = entry.failures + entry.pending
            let free = LoginThrottleTable.freeFailures(key)
            if counted >= free {
                let turn = max(now, entry.nextTurn)
                guard turn - now <= .milliseconds(AuthLimits.failureMaxWaitMilliseconds) else { return .refuse }
                wait = max(wait, turn - now)
                entry.nextTurn = turn + LoginThrottleTable.spacing(over: counted - free + 1)
            }
            entry.pending += 1
            entry.last = now
            updated.append((key, entry))
        }
        for (key, entry) in updated { store(key, entry, now: now) }
        return .proceed(wait: wait)
    }

    /// Ends an attempt: a failure is remembered on every key; a success forgets the (client, name)
    /// key (the user knows the password) but not the client's count across names.
    package mutating func finish(_ keys: [Key], succeeded: Bool, now: ContinuousClock.Instant) {
        for key in keys {
            guard var entry = entries[key] else { continue }
            entry.pending = max(entry.pending - 1, 0)
            if succeeded {
                if key.name != nil { entry.failures = 0 }
            } else {
                entry.failures += 1
                entry.last = now
            }
            if entry.failures == 0 && entry.pending == 0 {
                entries.removeValue(forKey: key)
            } else {
                entries[key] = entry
            }
        }
    }

    /// Stores an entry, making room first when the table is full: expired entries go, then the
    /// idle entry with the fewest failures.
    private mutating func store(_ key: Key, _ entry: Entry, now: ContinuousClock.Instant) {
        if entries[key] == nil && entries.count >= capacity {
            let window = self.window
            entries = entries.filter { $0.value.pending > 0 || now - $0.value.last < window }
            if entries.count >= capacity,
                let victim = entries.filter({ $0.value.pending == 0 }).min(by: { $0.value.failures < $1.value.failures }
                )
            {
                entries.removeValue(forKey: victim.key)
            }
            // Every entry has an attempt in flight: the table may exceed its size by those only.
        }
        entries[key] = entry
    }
}
