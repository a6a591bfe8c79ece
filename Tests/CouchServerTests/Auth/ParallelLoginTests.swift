import CouchStore
import Foundation
import Synchronization
import Testing

@testable import CouchServer

/// Found by the soak (bench/soak.py, 2,000 clients with Basic auth on keep-alive connections): when the verified
/// credentials' cache entry expired after 300 s, every request in flight missed it at once, each took a
/// `LoginThrottle` turn (pending attempts count as failures there) and its own PBKDF2, and past the throttle's
/// 8 s queue the rest were refused: the right password answered 401 "Name or password is incorrect." for ~700
/// requests in the fifth minute. The same happens to any client that opens many connections with a cold cache.
/// The fix (`LoginFlights`) shares a success only between byte-identical credentials; these tests also hold it
/// to what it must not share.
@Suite struct ParallelLoginTests {
    /// An authenticator whose server admin is `admin:pw`, hashed at `iterations`.
    func authenticator(iterations: Int) throws -> Authenticator {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory + "/databases")
        let (admins, _) = try ServerAdmins.setUp(credentials: "admin:pw", dataDir: directory, iterations: iterations)
        return Authenticator(admins: admins, secret: [1], store: store, iterations: iterations)
    }

    /// Whether each of some logins running in parallel got an account.
    final class Outcomes: Sendable {
        private let results: Mutex<[Bool]>
        private let done = DispatchGroup()

        /// Starts `logins` on one thread each, at once (the engine has a thread per connection; a dispatch pool
        /// would run two at a time).
        init(_ logins: [@Sendable () -> Authenticator.Account?]) {
            results = Mutex([Bool](repeating: false, count: logins.count))
            for (index, login) in logins.enumerated() {
                done.enter()
                Thread.detachNewThread { [self] in
                    let account = login()
                    results.withLock { $0[index] = account != nil }
                    done.leave()
                }
            }
        }

        func wait() -> [Bool] {
            done.wait()
            return results.withLock { $0 }
        }
    }

    func inParallel(_ logins: [@Sendable () -> Authenticator.Account?]) -> [Bool] {
        Outcomes(logins).wait()
    }

    @Test func parallelLoginsWithTheRightPasswordAndAColdCacheAllSucceed() throws {
        // Enough iterations that one verification outlasts the arrival of all the parallel attempts.
        let authenticator = try authenticator(iterations: 200_000)
        let login: @Sendable () -> Authenticator.Account? = {
            authenticator.login(name: "admin", password: Array("pw".utf8), client: "127.0.0.1")
        }
        let results = inParallel(Array(repeating: login, count: 32))
        let refused = results.filter { !$0 }.count
        #expect(refused == 0, "\(refused) of \(results.count) parallel logins with the right password were refused")
        #expect(authenticator.flights.count == 0)
    }

    @Test func parallelWrongPasswordsAreStillRefused() throws {
        let authenticator = try authenticator(iterations: 1000)
        let guesses = (0..<8).map { index -> @Sendable () -> Authenticator.Account? in
            { authenticator.login(name: "admin", password: Array("guess-\(index % 4)".utf8), client: "10.0.0.66") }
        }
        #expect(inParallel(guesses).allSatisfy { !$0 })
        #expect(authenticator.login(name: "admin", password: Array("pw".utf8), client: "10.0.0.7") != nil)
    }

    /// Holds a flight for `password` open, as a slow verification would, and lands it with `succeeded` after
    /// `seconds` (by then every request the test started is in `login`, verifying or waiting).
    func holdFlight(
        _ authenticator: Authenticator, _ account: Authenticator.Account, password: [UInt8], seconds: Double,
        succeeded: Bool
    ) {
        let credentials = LoginFlights.Credentials(account, password: password)
        let (flight, leads) = authenticator.flights.join(credentials, turn: .now)
        #expect(leads)
        Thread.detachNewThread { [authenticator] in
            Thread.sleep(forTimeInterval: seconds)
            authenticator.flights.land(flight, credentials, succeeded: succeeded)
        }
    }

    /// The attack: while the real user's login is being verified, send guesses for the same name that differ
    /// from the real password by a byte, are a prefix or an extension of it, or are the same text in another
    /// Unicode normalisation, hoping to be handed the verification's success. Each must be checked on its own.
    @Test func aGuessCannotRideOnAnotherClientsSuccess() throws {
        let authenticator = try authenticator(iterations: 1000)
        let later = ContinuousClock.now + .seconds(60)
        let right = Array("caf\u{E9}".utf8)
        authenticator.temporary.add(name: "victim", password: right, database: "d", expires: later)
        let victim = try #require(authenticator.account(named: "victim"))
        holdFlight(authenticator, victim, password: right, seconds: 0.3, succeeded: true)
        // (Not `right + [0]`: PBKDF2-HMAC pads a short password with zero bytes, so a trailing NUL verifies, in
        // CouchDB too.)
        let guesses: [[UInt8]] = [
            Array("cafe\u{301}".utf8), Array("Caf\u{E9}".utf8), Array(right.dropLast()), [0] + right, right + right, [],
        ]
        let logins = guesses.map { guess -> @Sendable () -> Authenticator.Account? in
            { authenticator.login(name: "victim", password: guess, client: "10.0.0.66") }
        }
        let accepted = inParallel(logins)
        #expect(accepted.allSatisfy { !$0 }, "accepted: \(accepted)")
    }

    /// The same attack with a look-alike name: "\u{212A}ate" (KELVIN SIGN) is "Kate" to Swift's `String ==` and
    /// another person to CouchDB; with the victim's password it must not share the victim's success.
    @Test func aLookalikeNameCannotRideOnTheVictimsSuccess() throws {
        let authenticator = try authenticator(iterations: 1000)
        let later = ContinuousClock.now + .seconds(60)
        authenticator.temporary.add(name: "Kate", password: Array("pw".utf8), database: "d", expires: later)
        authenticator.temporary.add(name: "\u{212A}ate", password: Array("other".utf8), database: "d", expires: later)
        let victim = try #require(authenticator.account(named: "Kate"))
        holdFlight(authenticator, victim, password: Array("pw".utf8), seconds: 0.3, succeeded: true)
        let twin: @Sendable () -> Authenticator.Account? = {
            authenticator.login(name: "\u{212A}ate", password: Array("pw".utf8), client: "10.0.0.66")
        }
        #expect(inParallel(Array(repeating: twin, count: 4)).allSatisfy { !$0 })
    }

    /// Requests with byte-identical credentials wait for the flight and take its success, without a PBKDF2.
    @Test func identicalCredentialsShareTheFlightsSuccess() throws {
        let authenticator = try authenticator(iterations: 1000)
        let account = try #require(authenticator.account(named: "admin"))
        // A flight saying a wrong password is right: only a follower that took the flight's answer instead of
        // verifying gets in, so the test sees that the answer was shared.
        holdFlight(authenticator, account, password: Array("not-pw".utf8), seconds: 0.3, succeeded: true)
        let follower: @Sendable () -> Authenticator.Account? = {
            authenticator.login(name: "admin", password: Array("not-pw".utf8), client: "127.0.0.1")
        }
        #expect(inParallel(Array(repeating: follower, count: 4)).allSatisfy { $0 })
    }

    /// A failed flight shares nothing: each waiting request verifies for itself (and is counted by the
    /// throttle), so a flight that failed for another reason (its leader was refused) does not refuse them.
    @Test func aFailedFlightSharesNothing() throws {
        let authenticator = try authenticator(iterations: 1000)
        let account = try #require(authenticator.account(named: "admin"))
        holdFlight(authenticator, account, password: Array("pw".utf8), seconds: 0.3, succeeded: false)
        let follower: @Sendable () -> Authenticator.Account? = {
            authenticator.login(name: "admin", password: Array("pw".utf8), client: "127.0.0.1")
        }
        #expect(inParallel(Array(repeating: follower, count: 4)).allSatisfy { $0 })
    }

    /// The attack of `test_login_throttle_counts_parallel_guesses` while a verification of the same guess is
    /// in flight (held open here, as a slow PBKDF2 would): the identical guesses wait for it, but each took its
    /// turn when it arrived, so the queue is full and the attacker's next attempt, the right password, is
    /// refused unverified; the real user elsewhere still logs in. (Followers that wait without a turn left the
    /// queue empty: the right password got in.)
    @Test func identicalParallelGuessesAreEachCountedByTheThrottle() throws {
        let authenticator = try authenticator(iterations: 1000)
        let attacker = "10.0.0.66"
        let guess = Array("guess".utf8)
        for _ in 0..<AuthLimits.freeFailures {
            #expect(authenticator.login(name: "admin", password: guess, client: attacker) == nil)
        }
        let account = try #require(authenticator.account(named: "admin"))
        holdFlight(authenticator, account, password: guess, seconds: 1, succeeded: false)
        let login: @Sendable () -> Authenticator.Account? = {
            authenticator.login(name: "admin", password: guess, client: attacker)
        }
        let guesses = Outcomes(Array(repeating: login, count: 40))
        Thread.sleep(forTimeInterval: 0.3)  // every guess has taken (or been refused) its turn and waits
        #expect(authenticator.login(name: "admin", password: Array("pw".utf8), client: attacker) == nil)
        #expect(authenticator.login(name: "admin", password: Array("pw".utf8), client: "10.0.0.7") != nil)
        #expect(guesses.wait().allSatisfy { !$0 })
    }
}
