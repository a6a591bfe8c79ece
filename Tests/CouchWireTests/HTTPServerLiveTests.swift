import Foundation
import Synchronization
import Testing

@testable import CouchWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.serialized) struct HTTPServerLiveTests {
    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            for index in 0..<5 {
                try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nr\(index)")
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(response.bodyText == "r\(index)")
                #expect(response.header("Connection") == nil)
                #expect(response.header("Server") == "couchlite")
                #expect(response.header("Date")?.hasSuffix(" GMT") == true)
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send(
                "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nsecond"
                    + "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "done")
            #expect(try client.readResponse().bodyText == "second")
            #expect(try client.readResponse().bodyText == "hello")
        }
    }

    @Test func chunkedUploadIsDecoded() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            try client.send("5\r\nhello\r\n")
            usleep(50_000)
            try client.send("6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText == "hello world")
            // The connection stays usable after a chunked body.
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
        }
    }

    @Test func largeUploadIsReadIncrementally() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            let size = 8 * 1024 * 1024
            try client.send("PUT /count HTTP/1.1\r\nHost: x\r\nContent-Length: \(size)\r\n\r\n")
            let block = [UInt8](repeating: 0x61, count: 1024 * 1024)
            for _ in 0..<8 { try client.send(block) }
            #expect(try client.readResponse().bodyText == String(size))
        }
    }

    @Test func expectContinueGets100BeforeTheBody() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("PUT /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            let interim = try client.readHead()
            #expect(interim.status == 100)
            try client.send("body")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText == "body")
        }
    }

    @Test func expectContinueOverTheLimitGets413WithoutContinue() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send(
                "PUT /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: \(2 << 20)\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 413)
            #expect(response.bodyText.contains("\"error\":\"too_large\""))
            #expect(response.header("Connection") == "close")
            #expect(client.serverClosed())
        }
    }

    @Test func headResponseHasNoBody() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try client.readResponse(isHEAD: true)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "5")
            // If body bytes had been sent, they would corrupt the next response on this connection.
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            let next = try client.readResponse()
            #expect(next.status == 200)
            #expect(next.bodyText == "hello")
            try client.send("HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse(isHEAD: true).status == 200)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
        }
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() throws {
        try withHTTPTestServer { port, _, _ in
            let plain = try RawHTTPClient(port: port)
            try plain.send("GET /hello HTTP/1.0\r\n\r\n")
            let response = try plain.readResponse()
            #expect(response.status == 200)
            #expect(response.header("Connection") == "close")
            #expect(plain.serverClosed())

            let kept = try RawHTTPClient(port: port)
            try kept.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let first = try kept.readResponse()
            #expect(first.header("Connection") == "keep-alive")
            try kept.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            #expect(try kept.readResponse().bodyText == "hello")

            // A response of unknown length is close-delimited on HTTP/1.0, never chunked.
            let streamed = try RawHTTPClient(port: port)
            try streamed.send("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let stream = try streamed.readResponse()
            #expect(stream.header("Transfer-Encoding") == nil)
            #expect(stream.header("Connection") == "close")
            #expect(stream.bodyText == "line 0\nline 1\nline 2\n")
        }
    }

    @Test func streamedResponseIsChunked() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.header("Transfer-Encoding") == "chunked")
            #expect(response.bodyText == "line 0\nline 1\nline 2\n")
        }
    }

    @Test func connectionCloseRequestAndHandlerCloseAreHonoured() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(try client.readResponse().header("Connection") == "close")
            #expect(client.serverClosed())
            let other = try RawHTTPClient(port: port)
            try other.send("GET /close HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try other.readResponse().header("Connection") == "close")
            #expect(other.serverClosed())
        }
    }

    @Test func smallUnreadBodyIsDrainedAndTheConnectionKept() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789")
            let first = try client.readResponse()
            #expect(first.header("Connection") == nil)
            try client.send(
                "POST /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
        }
    }

    @Test func largeUnreadBodyClosesTheConnection() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: \(1 << 20)\r\n\r\nsome")
            let response = try client.readResponse()
            #expect(response.bodyText == "hello")
            #expect(response.header("Connection") == "close")
            #expect(client.serverClosed())
        }
    }

    @Test func writingPastContentLengthClosesTheConnection() throws {
        try withHTTPTestServer { port, _, probe in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /overflow HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(throws: HTTPTestFailure.self) { try client.readResponse() }
            #expect(
                probe.observedErrors.withLock { $0 } == [
                    .responseMisuse("More body bytes than the declared Content-Length.")
                ])
        }
    }

    @Test func handlersRunOnThreadsWithTheConfiguredStack() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /stack HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == String(HTTPLimits.threadStackBytes))
        }
    }

    @Test func handlerWithoutResponseGets500() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 500)
            #expect(response.bodyText.contains("\"error\":\"unknown_error\""))
        }
    }

    @Test(.enabled(if: HTTPTestSupport.hasIPv6Loopback, "this machine has no IPv6 loopback"))
    func ipv6LoopbackIsServed() throws {
        try withHTTPTestServer({ $0.host = "::1" }) { port, _, _ in
            let client = try RawHTTPClient(host: "::1", port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: [::1]\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
        }
    }

    @Test(.enabled(if: HTTPTestSupport.hasIPv6Loopback, "this machine has no IPv6 loopback"))
    func ipv6WildcardAlsoServesIPv4() throws {
        try withHTTPTestServer({ $0.host = "::" }) { port, _, _ in
            for host in ["127.0.0.1", "::1"] {
                let client = try RawHTTPClient(host: host, port: port)
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().bodyText == "hello")
            }
        }
    }

    @Test func http10BodyWithContentLength() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /echo HTTP/1.0\r\nContent-Length: 4\r\n\r\nabcd")
            let response = try client.readResponse()
            #expect(response.bodyText == "abcd")
            #expect(response.header("Connection") == "close")
        }
    }

    @Test func clientThatStopsReadingTimesOutTheWriter() throws {
        try withHTTPTestServer({ $0.sendStallTimeout = .milliseconds(300) }) { port, server, probe in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
            let deadline = HTTPDeadline.after(.seconds(10))
            while probe.observedErrors.withLock({ $0.isEmpty }), HTTPDeadline.now() < deadline { usleep(20_000) }
            #expect(probe.observedErrors.withLock { $0 } == [.timeout])
            usleep(100_000)
            #expect(server.openConnections == 0)
        }
    }

    @Test func localhostAndWildcardHostsBind() throws {
        try withHTTPTestServer({ $0.host = "localhost" }) { port, _, _ in
            let client = try RawHTTPClient(host: "127.0.0.1", port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
        }
        try withHTTPTestServer({ $0.host = "0.0.0.0" }) { port, _, _ in
            let client = try RawHTTPClient(host: "127.0.0.1", port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
        }
    }

    @Test func extraHostsAreBoundOnTheSamePort() throws {
        // Linux loopback answers every 127/8 address: two addresses, one port, one server.
        try withHTTPTestServer({ $0.extraHosts = ["127.0.0.2", "name.invalid"] }) { port, _, _ in
            for host in ["127.0.0.1", "127.0.0.2"] {
                let client = try RawHTTPClient(host: host, port: port)
                try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try client.readResponse().bodyText == "hello")
            }
            #expect(throws: (any Error).self) { try RawHTTPClient(host: "127.0.0.3", port: port) }
        }
    }

    // MARK: Attacks and limits, live

    @Test func requestSmugglingIsAnswered400AndClosed() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send(
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.header("Connection") == "close")
            #expect(response.header("Content-Type") == "application/json")
            #expect(response.bodyText.hasPrefix("{\"error\":\"bad_request\",\"reason\":"))
            #expect(client.serverClosed())
        }
    }

    @Test func oversizedRequestLineIsAnswered414() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 414)
            #expect(response.header("Connection") == "close")
            #expect(client.serverClosed())
        }
    }

    @Test func tooManyHeadersAreAnswered431() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET / HTTP/1.1\r\n" + (0..<101).map { "X-\($0): v\r\n" }.joined() + "\r\n")
            let response = try client.readResponse()
            #expect(response.status == 431)
            #expect(response.bodyText.contains("header_fields_too_large"))
        }
    }

    @Test func truncatedChunkedBodyFailsTheHandlerRead() throws {
        try withHTTPTestServer { port, _, probe in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.header("Connection") == "close")
            #expect(probe.observedErrors.withLock { $0.first } == .malformed("Invalid chunk size."))
        }
    }

    @Test func slowlorisHeaderTricklingIsCutOffByTheHeaderTimeout() throws {
        try withHTTPTestServer({ $0.headerTimeout = .milliseconds(400) }) { port, _, _ in
            let client = try RawHTTPClient(port: port)
            var sendFailed = false
            let elapsed = elapsedSeconds {
                // One byte every 50 ms would take far longer than the header timeout to finish the head.
                for byte in "GET / HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8 {
                    if (try? client.send([byte])) == nil {
                        sendFailed = true
                        break
                    }
                    usleep(50_000)
                }
            }
            let rest = (try? client.readUntilClosed()).map { String(decoding: $0, as: UTF8.self) } ?? ""
            #expect(sendFailed || rest.hasPrefix("HTTP/1.1 408 "), "got \(rest)")
            #expect(elapsed < 4)
        }
    }

    @Test func idleKeepAliveConnectionIsClosedAfterIdleTimeout() throws {
        try withHTTPTestServer({ $0.idleTimeout = .milliseconds(300) }) { port, server, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            let elapsed = elapsedSeconds { #expect(client.serverClosed()) }
            #expect(elapsed < 3)
            usleep(50_000)
            #expect(server.openConnections == 0)
        }
    }

    @Test func stalledBodyFailsWithTimeout() throws {
        try withHTTPTestServer({ $0.bodyStallTimeout = .milliseconds(300) }) { port, _, probe in
            let client = try RawHTTPClient(port: port)
            try client.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf")
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(probe.observedErrors.withLock { $0 } == [.timeout])
        }
    }

    @Test func slowClientDoesNotBlockAnother() throws {
        try withHTTPTestServer { port, _, _ in
            let slow = try RawHTTPClient(port: port)
            try slow.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly a little")
            let partial = try RawHTTPClient(port: port)
            try partial.send("GET /hel")
            let elapsed = try elapsedSeconds {
                let fast = try RawHTTPClient(port: port)
                try fast.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try fast.readResponse().bodyText == "hello")
            }
            #expect(elapsed < 1)
        }
    }

    @Test func threeHundredConcurrentConnectionsAreHeldThenAllAnswered() throws {
        let count = 300
        try withHTTPTestServer(gateCount: count) { port, server, probe in
            var clients: [RawHTTPClient] = []
            for _ in 0..<count {
                let client = try RawHTTPClient(port: port, timeout: 20)
                try client.send("GET /gate HTTP/1.1\r\nHost: x\r\n\r\n")
                clients.append(client)
            }
            for client in clients {
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(Int(response.bodyText) ?? 0 >= count)
            }
            #expect(probe.arrivalCount == count)
            #expect(server.openConnections == count)
        }
    }

    @Test func twoThousandHeldConnectionsKeepMemoryFlat() throws {
        let count = 2000
        try withHTTPTestServer { port, server, probe in
            // Warm up thread creation and allocator arenas, so the measurement shows the per-connection cost.
            var clients: [RawHTTPClient] = []
            let warmUp = 50
            for _ in 0..<warmUp {
                let client = try RawHTTPClient(port: port, timeout: 30)
                try client.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
                clients.append(client)
            }
            let deadlineWarm = HTTPDeadline.after(.seconds(10))
            while probe.arrivalCount < warmUp, HTTPDeadline.now() < deadlineWarm { usleep(5_000) }
            let before = processResidentBytes()
            for _ in warmUp..<count {
                let client = try RawHTTPClient(port: port, timeout: 30)
                try client.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
                clients.append(client)
            }
            let deadline = HTTPDeadline.after(.seconds(20))
            while probe.arrivalCount < count, HTTPDeadline.now() < deadline { usleep(10_000) }
            #expect(probe.arrivalCount == count)
            #expect(server.openConnections == count)
            let after = processResidentBytes()
            let perConnection = (after - before) / (count - warmUp)
            print(
                "HTTP engine: \(count) held connections, RSS \(before >> 20) MiB -> \(after >> 20) MiB, "
                    + "\(perConnection >> 10) KiB per connection (server and test client together)")
            #expect(perConnection < 64 * 1024)
            probe.released.withLock { $0 = true }
            for client in clients { #expect(try client.readResponse().bodyText == "released") }
        }
    }

    @Test func connectionsOverTheCapAreAnswered503() throws {
        try withHTTPTestServer({ $0.maxConnections = 2 }) { port, _, _ in
            let first = try RawHTTPClient(port: port)
            let second = try RawHTTPClient(port: port)
            try first.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            try second.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try first.readResponse().status == 200)
            #expect(try second.readResponse().status == 200)
            let third = try RawHTTPClient(port: port)
            let refused = try third.readResponse()
            #expect(refused.status == 503)
            #expect(refused.bodyText.contains("service_unavailable"))
        }
    }

    @Test func longPollHandlerSeesThePeerClose() throws {
        try withHTTPTestServer { port, _, probe in
            var client: RawHTTPClient? = try RawHTTPClient(port: port)
            try client?.send("GET /longpoll HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client?.readHead().status == 200)
            client = nil
            let deadline = HTTPDeadline.after(.seconds(3))
            while probe.observedErrors.withLock({ $0.isEmpty }), HTTPDeadline.now() < deadline { usleep(10_000) }
            #expect(probe.observedErrors.withLock { $0 } == [.clientGone])
        }
    }

    @Test func gracefulShutdownLetsAnInFlightRequestFinish() throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.idleTimeout = .seconds(5)
        let probe = HTTPHandlerProbe()
        let server = HTTPServer(configuration: configuration, handler: httpTestHandler(probe: probe))
        let port = try server.start()
        let idle = try RawHTTPClient(port: port)
        try idle.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        let busy = try RawHTTPClient(port: port)
        try busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)
        let stopper = Thread { server.shutdown(timeout: .seconds(5)) }
        stopper.start()
        let response = try busy.readResponse()
        #expect(response.status == 200)
        #expect(response.bodyText == "done")
        #expect(response.header("Connection") == "close")
        #expect(busy.serverClosed())
        #expect(idle.serverClosed())
        server.waitUntilStopped()
        #expect(server.openConnections == 0)
        #expect(throws: (any Error).self) {
            let late = try RawHTTPClient(port: port, timeout: 1)
            try late.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try late.readResponse()
        }
    }
    @Test func shutdownCutsARequestStillRunningAtItsDeadlineAndSaysWhich() throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.idleTimeout = .seconds(5)
        let probe = HTTPHandlerProbe()
        let server = HTTPServer(configuration: configuration, handler: httpTestHandler(probe: probe))
        let port = try server.start()
        let idle = try RawHTTPClient(port: port)
        try idle.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try idle.readResponse().status == 200)
        // A body that never comes: the handler waits in its read until the cut.
        let slow = try RawHTTPClient(port: port)
        try slow.send("POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc")
        usleep(200_000)
        let started = ContinuousClock.now
        let cut = server.shutdown(until: .now + .milliseconds(300), grace: .seconds(5))
        let took = ContinuousClock.now - started
        #expect(cut.map { "\($0.method) \($0.path) \($0.client ?? "-")" } == ["POST /count 127.0.0.1"])
        #expect(took >= .milliseconds(300) && took < .seconds(3), "took \(took)")
        #expect(server.remainingConnections == 0)
        #expect(slow.serverClosed())
        #expect(idle.serverClosed())
    }
}
