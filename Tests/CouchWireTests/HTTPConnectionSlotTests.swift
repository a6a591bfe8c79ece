import Foundation
import Synchronization
import Testing

@testable import CouchWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Attacks on the connection slots (a denial of service): a few clients must not be able to hold every slot
/// by trickling a body, by keeping idle connections open, or by opening many connections from one address.
@Suite(.serialized) struct HTTPConnectionSlotTests {
    /// One byte every 100 ms never trips a 5 s stall timeout; the whole-body deadline must cut it off.
    @Test func test_trickled_body_is_cut_off_by_the_total_body_deadline() throws {
        try withHTTPTestServer({
            $0.bodyStallTimeout = .seconds(5)
            $0.bodyTimeout = .milliseconds(700)
            $0.minimumBodyRate = 1 << 20
        }) { port, _, probe in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
            var sendFailed = false
            let elapsed = elapsedSeconds {
                for _ in 0..<100 {
                    if (try? client.send("a")) == nil {
                        sendFailed = true
                        break
                    }
                    usleep(100_000)
                    if probe.observedErrors.withLock({ !$0.isEmpty }) { break }
                }
            }
            let rest = (try? client.readUntilClosed()).map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(sendFailed || rest.hasPrefix("HTTP/1.1 408 "), "got \(rest)")
            #expect(elapsed < 4, "a trickled body held its slot for \(elapsed) s")
            #expect(probe.observedErrors.withLock { $0 } == [.timeout])
        }
    }

    /// A body sent at an honest speed earns time: 200 KiB in 1.2 s against a 0.5 s base deadline.
    @Test func steadyBodyEarnsMoreTimeThanTheBaseDeadline() throws {
        try withHTTPTestServer({
            $0.bodyTimeout = .milliseconds(500)
            $0.minimumBodyRate = 16 * 1024
        }) { port, _, _ in
            let client = try RawHTTPClient(port: port)
            let total = 200 * 1024
            try client.send("POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: \(total)\r\n\r\n")
            for _ in 0..<12 {
                try client.send([UInt8](repeating: 0x61, count: total / 12))
                usleep(100_000)
            }
            try client.send([UInt8](repeating: 0x61, count: total - total / 12 * 12))
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText == String(total))
        }
    }

    /// Idle keep-alive connections fill every slot; once the server is crowded they must yield, so a new
    /// client is served instead of refused 503.
    @Test func test_idle_keepalive_connections_yield_slots_when_crowded() throws {
        try withHTTPTestServer({
            $0.maxConnections = 4
            $0.idleTimeout = .seconds(30)
            $0.crowdedIdleTimeout = .milliseconds(300)
        }) { port, _, _ in
            var idle: [RawHTTPClient] = []
            for _ in 0..<4 {
                let client = try RawHTTPClient(port: port)
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200)
                idle.append(client)
            }
            usleep(500_000)
            let newcomer = try RawHTTPClient(port: port)
            try newcomer.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try newcomer.readResponse().status == 200)
            withExtendedLifetime(idle) {}
        }
    }

    /// One address may hold only its share of the slots; closing one frees it for that address again.
    @Test func test_one_address_cannot_take_every_connection_slot() throws {
        try withHTTPTestServer({
            $0.maxConnections = 100
            $0.maxConnectionsPerAddress = 2
            $0.perAddressLimitCountsLoopback = true
        }) { port, server, _ in
            var first: RawHTTPClient? = try RawHTTPClient(port: port)
            let second = try RawHTTPClient(port: port)
            for client in [first, second].compactMap({ $0 }) {
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200)
            }
            let third = try RawHTTPClient(port: port)
            let refused = try third.readResponse()
            #expect(refused.status == 503)
            first = nil
            let deadline = HTTPDeadline.after(.seconds(3))
            while server.openConnections > 1, HTTPDeadline.now() < deadline { usleep(10_000) }
            let fourth = try RawHTTPClient(port: port)
            try fourth.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try fourth.readResponse().status == 200)
            withExtendedLifetime(first) {}
        }
    }

    /// Loopback is not counted by default (local benchmarks open thousands of feeds).
    @Test func loopbackIsExemptFromThePerAddressLimitByDefault() throws {
        try withHTTPTestServer({ $0.maxConnectionsPerAddress = 1 }) { port, _, _ in
            let clients = try (0..<3).map { _ in try RawHTTPClient(port: port) }
            for client in clients {
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().status == 200)
            }
        }
    }
}
