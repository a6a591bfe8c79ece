import Foundation
import RevTree
import Synchronization
import Testing

@testable import CouchServer

/// Found by the soak (bench/soak.py, 2,000 clients with Basic auth on keep-alive connections): when the verified
/// credentials' cache entry expired after 300 s, every request in flight missed it at once, each took a
/// `LoginThrottle` turn (pending attempts count as failures there) and its own PBKDF2, and past the throttle's
/// 8 s queue the rest were refused: the right password answered 401 "Name or password is incorrect." for ~700
/// requests in the fifth minute. The same happens to any client that opens many connections with a cold cache.
@Suite struct ParallelLoginTests {
    @Test func parallelLoginsWithTheRightPasswordAndAColdCacheAllSucceed() throws {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory + "/databases")
        // Enough iterations that one verification outlasts the arrival of all the parallel attempts.
        let iterations = 200_000
        let (admins, _) = try ServerAdmins.setUp(credentials: "admin:pw", dataDir: directory, iterations: iterations)
        let authenticator = Authenticator(admins: admins, secret: [1], store: store, iterations: iterations)
        let attempts = 32
        let results = Mutex([Bool](repeating: false, count: attempts))
        let started = ContinuousClock.now
        // One thread per attempt, as the engine has one per connection (a dispatch pool would run two at a time).
        let done = DispatchGroup()
        for index in 0..<attempts {
            done.enter()
            Thread.detachNewThread {
                let account = authenticator.login(name: "admin", password: Array("pw".utf8), client: "127.0.0.1")
                results.withLock { $0[index] = account != nil }
                done.leave()
            }
        }
        done.wait()
        let refused = results.withLock { $0.filter { !$0 }.count }
        #expect(refused == 0, "\(refused) of \(attempts) parallel logins with the right password were refused")
        // One verification serves them all: no throttle queue of seconds.
        #expect(ContinuousClock.now - started < .seconds(6))
    }

    @Test func parallelWrongPasswordsAreStillRefused() throws {
        let directory = temporaryDirectory()
        let store = try Store(directory: directory + "/databases")
        let (admins, _) = try ServerAdmins.setUp(credentials: "admin:pw", dataDir: directory, iterations: 1000)
        let authenticator = Authenticator(admins: admins, secret: [1], store: store, iterations: 1000)
        let accepted = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let password = Array("guess-\(index % 4)".utf8)
            if authenticator.login(name: "admin", password: password, client: "10.0.0.66") != nil {
                accepted.withLock { $0 += 1 }
            }
        }
        #expect(accepted.withLock { $0 } == 0)
        #expect(authenticator.login(name: "admin", password: Array("pw".utf8), client: "10.0.0.7") != nil)
    }
}
