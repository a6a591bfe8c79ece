import CouchWire
import Foundation
import Synchronization

/// Verifications of credentials running now, so that parallel requests bringing the same credentials with a
/// cold cache wait for one PBKDF2 instead of each running its own (`Authenticator.login`).
///
/// Found by the soak (bench/soak.py): when the server admin's cache entry expired under 2,000 busy connections,
/// every request missed at once, took its own `LoginThrottle` turn (turns in flight count as failures there, so
/// that parallel guesses queue) and its own PBKDF2; past the throttle's 8 s bound the rest were refused, and the
/// right password answered 401 for ~700 requests. The same befalls any client opening many connections at once.
///
/// Only a success is shared, and only with requests whose credentials are the same bytes: name, password and
/// the stored hash they were checked against (`Credentials` compares every field by bytes; a digest would do
/// in practice, bytes need no argument). A failure shares nothing: each request whose flight failed makes its
/// own throttled attempt, so identical parallel guesses are each counted. The throttle is never bypassed:
/// every request takes its turn when it arrives, before it waits for a flight (see `Authenticator.login`).
final class LoginFlights: Sendable {
    /// What a flight checks, compared byte for byte (`String ==` would compare canonical equivalents as equal).
    struct Credentials: Hashable, Sendable {
        package let name: [UInt8]
        package let password: [UInt8]
        let salt: [UInt8]
        let derivedKey: [UInt8]
        let iterations: Int

        init(_ account: Authenticator.Account, password: [UInt8]) {
            name = Array(account.name.text.utf8)
            self.password = password
            salt = Array(account.hash.salt.utf8)
            derivedKey = Array(account.hash.derivedKey.utf8)
            iterations = account.hash.iterations
        }
    }

    private let running = Mutex<[Credentials: LoginFlight]>([:])

    /// The flight checking these credentials now, or a new one that the caller leads (`leads`) and must `land`
    /// exactly once.
    /// - Parameter turn: the caller's throttle turn (nil: refused), recorded when it leads.
    func join(_ credentials: Credentials, turn: ContinuousClock.Instant?) -> (flight: LoginFlight, leads: Bool) {
        running.withLock { flights in
            if let flight = flights[credentials] { return (flight, false) }
            let flight = LoginFlight(turn: turn)
            flights[credentials] = flight
            return (flight, true)
        }
    }

    /// Ends a flight: later requests start their own, and the waiting ones get `succeeded`.
    func land(_ flight: LoginFlight, _ credentials: Credentials, succeeded: Bool) {
        running.withLock { flights in
            if flights[credentials] === flight { flights[credentials] = nil }
        }
        flight.finish(succeeded: succeeded)
    }

    /// Flights in the air (for tests).
    var count: Int { running.withLock { $0.count } }
}

/// One verification in progress; requests bringing the same credentials meanwhile wait for its answer.
///
/// `@unchecked Sendable`: `turn` is immutable and `succeeded` is read and written only with `condition` held.
final class LoginFlight: @unchecked Sendable {
    /// When the leading request's throttle turn comes (nil: it was refused and verifies nothing).
    let turn: ContinuousClock.Instant?
    // `succeeded` is guarded by `condition`.
    private let condition = NSCondition()
    private var succeeded: Bool?

    fileprivate init(turn: ContinuousClock.Instant?) {
        self.turn = turn
    }

    /// Blocks until the verification is done or `deadline` passed.
    /// - Returns: true when the credentials verified, false when they did not, nil at the deadline.
    func wait(until deadline: ContinuousClock.Instant?) -> Bool? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let succeeded { return succeeded }
            guard let deadline else {
                condition.wait()
                continue
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            _ = condition.wait(until: Date(timeIntervalSinceNow: left.timeInterval))
        }
    }

    fileprivate func finish(succeeded: Bool) {
        condition.lock()
        self.succeeded = succeeded
        condition.broadcast()
        condition.unlock()
    }
}
