import Foundation
import Testing

@testable import CouchWire

/// The upgrade and the channel over real sockets, through a test handler (no route of the server upgrades yet).
@Suite(.serialized) struct WebSocketLiveTests {
    /// Upgrades every request it can and echoes messages; `bye` as text closes with 1000.
    static func echoHandler(limits: WebSocketLimits) -> HTTPHandler {
        { head, _, writer in
            let handshake: WebSocketHandshake
            do throws(WebSocketHandshake.Failure) {
                handshake = try WebSocketHandshake(
                    request: head, supportedProtocols: ["BLIP_3+CBMobile_3", "BLIP_3+CBMobile_2"])
            } catch {
                var headers = error.headers
                headers.add("Content-Type", "application/json")
                let body = "{\"error\":\"bad_request\",\"reason\":\"\(HTTPError.escape(error.reason))\"}\n"
                try? writer.respond(status: error.status, headers: headers, body: Array(body.utf8))
                return
            }
            guard let channel = try? writer.upgradeToWebSocket(handshake, limits: limits) else { return }
            while true {
                switch channel.receive() {
                case .message(.text("bye")):
                    channel.close(.normal, reason: "bye")
                    return
                case .message(let message):
                    try? channel.send(message)
                case .timedOut: continue
                case .closed: return
                }
            }
        }
    }

    static func withEchoServer(
        limits: WebSocketLimits = WebSocketLimits(), tls: TLSContext? = nil, _ body: (Int) throws -> Void
    ) throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.tls = tls
        configuration.idleTimeout = .seconds(5)
        configuration.headerTimeout = .seconds(5)
        let server = HTTPServer(configuration: configuration, handler: echoHandler(limits: limits))
        let port = try server.start()
        defer { server.shutdown(timeout: .seconds(2)) }
        try body(port)
    }

    static let upgrade =
        "GET /db/_blipsync HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: vhMv6pajVi3gZsHOCuJiCw==\r\n"
        + "Sec-WebSocket-Protocol: BLIP_3+CBMobile_3,BLIP_3+CBMobile_2\r\n\r\n"

    /// One frame from the server: opcode and payload (servers never mask).
    static func readFrame(_ client: RawHTTPClient) throws -> (opcode: UInt8, payload: [UInt8]) {
        let head = try client.readExactly(2)
        #expect(head[1] & 0x80 == 0, "server frames are not masked")
        var length = Int(head[1] & 0x7F)
        if length == 126 {
            let bytes = try client.readExactly(2)
            length = Int(bytes[0]) << 8 | Int(bytes[1])
        } else if length == 127 {
            length = try client.readExactly(8).reduce(0) { $0 << 8 | Int($1) }
        }
        return (head[0] & 0x0F, try client.readExactly(length))
    }

    @Test func liteCoresUpgradeGets101AndMessagesEcho() throws {
        try Self.withEchoServer { port in
            let client = try RawHTTPClient(port: port)
            try client.send(Self.upgrade)
            let head = try client.readHead()
            #expect(head.status == 101)
            #expect(head.header("Upgrade") == "websocket")
            #expect(head.header("Connection") == "Upgrade")
            #expect(head.header("Sec-WebSocket-Accept") == "BDQST+wiMNbIeQKNNSjAs0XuuLY=")
            #expect(head.header("Sec-WebSocket-Protocol") == "BLIP_3+CBMobile_3")
            let blip: [UInt8] = [0x01, 0x00, 0x00, 0x8D, 0xEF, 0x02, 0xD2]
            try client.send(clientFrame(0x2, blip))
            let echoed = try Self.readFrame(client)
            #expect(echoed.opcode == 0x2 && echoed.payload == blip)
            // A 70,000-byte message in three fragments comes back as one frame with a 64-bit length.
            let big = (0..<70_000).map { UInt8($0 % 251) }
            try client.send(
                clientFrame(0x2, Array(big[..<30_000]), fin: false)
                    + clientFrame(0x0, Array(big[30_000..<60_000]), fin: false)
                    + clientFrame(0x0, Array(big[60_000...])))
            #expect(try Self.readFrame(client) == (0x2, big))
            try client.send(clientFrame(0x9, [1, 2]))
            #expect(try Self.readFrame(client) == (0xA, [1, 2]))
            try client.send(clientFrame(0x8, [0x03, 0xE8]))
            #expect(try Self.readFrame(client) == (0x8, [0x03, 0xE8]))
            #expect(client.serverClosed())
        }
    }

    @Test func framesSentRightAfterTheRequestHeadAreNotLost() throws {
        try Self.withEchoServer { port in
            let client = try RawHTTPClient(port: port)
            try client.send(Array(Self.upgrade.utf8) + clientFrame(0x2, [42]) + clientFrame(0x1, Array("bye".utf8)))
            #expect(try client.readHead().status == 101)
            #expect(try Self.readFrame(client) == (0x2, [42]))
            let close = try Self.readFrame(client)
            #expect(close.opcode == 0x8 && Array(close.payload.prefix(2)) == [0x03, 0xE8])
            try client.send(clientFrame(0x8, [0x03, 0xE8]))
            #expect(client.serverClosed())
        }
    }

    @Test func unmaskedFrameGetsClose1002AndTheConnectionEnds() throws {
        try Self.withEchoServer { port in
            let client = try RawHTTPClient(port: port)
            try client.send(Self.upgrade)
            #expect(try client.readHead().status == 101)
            try client.send(clientFrame(0x2, [1, 2, 3], mask: nil))
            let close = try Self.readFrame(client)
            #expect(close.opcode == 0x8 && Array(close.payload.prefix(2)) == [0x03, 0xEA])
            #expect(client.serverClosed())
        }
    }

    @Test func oversizedFrameGetsClose1009BeforeItsPayloadIsSent() throws {
        try Self.withEchoServer(limits: WebSocketLimits(maxFrameBytes: 1000, maxMessageBytes: 1000)) { port in
            let client = try RawHTTPClient(port: port)
            try client.send(Self.upgrade)
            #expect(try client.readHead().status == 101)
            // Only the header of a 1 GiB frame.
            try client.send([0x82, 0xFF, 0, 0, 0, 0, 0x40, 0, 0, 0, 1, 2, 3, 4])
            let close = try Self.readFrame(client)
            #expect(close.opcode == 0x8 && Array(close.payload.prefix(2)) == [0x03, 0xF1])
            #expect(client.serverClosed())
        }
    }

    @Test func aSilentPeerIsPingedThenDroppedWith1001() throws {
        let limits = WebSocketLimits(pingInterval: .milliseconds(200), pongTimeout: .milliseconds(300))
        try Self.withEchoServer(limits: limits) { port in
            let client = try RawHTTPClient(port: port)
            try client.send(Self.upgrade)
            #expect(try client.readHead().status == 101)
            #expect(try Self.readFrame(client) == (0x9, []))
            let close = try Self.readFrame(client)
            #expect(close.opcode == 0x8 && Array(close.payload.prefix(2)) == [0x03, 0xE9])
            #expect(client.serverClosed())
        }
    }

    @Test func aFrameTrickledByteByByteIsClosedWith1008() throws {
        let limits = WebSocketLimits(pingInterval: .seconds(30), frameTimeout: .milliseconds(400))
        try Self.withEchoServer(limits: limits) { port in
            let client = try RawHTTPClient(port: port)
            try client.send(Self.upgrade)
            #expect(try client.readHead().status == 101)
            let frame = clientFrame(0x2, [UInt8](repeating: 1, count: 100))
            try client.send(Array(frame.prefix(1)))
            usleep(250_000)
            try client.send(Array(frame[1..<2]))
            let close = try Self.readFrame(client)
            #expect(close.opcode == 0x8 && Array(close.payload.prefix(2)) == [0x03, 0xF0])
            #expect(client.serverClosed())
        }
    }

    @Test func aServerShutdownSaysGoingAwayAndCutsNoRequest() throws {
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.headerTimeout = .seconds(5)
        let server = HTTPServer(configuration: configuration, handler: Self.echoHandler(limits: WebSocketLimits()))
        let port = try server.start()
        let client = try RawHTTPClient(port: port)
        try client.send(Self.upgrade)
        #expect(try client.readHead().status == 101)
        try client.send(clientFrame(0x2, [5]))
        #expect(try Self.readFrame(client) == (0x2, [5]))
        // The open WebSocket ends with CLOSE 1001 at once, instead of being cut when the grace period is over.
        let cut = server.shutdown(timeout: .seconds(10))
        #expect(cut.isEmpty)
        let close = try Self.readFrame(client)
        #expect(close.opcode == 0x8 && Array(close.payload.prefix(2)) == [0x03, 0xE9])
        #expect(server.remainingConnections == 0)
    }

    @Test func refusedUpgradesGetAnHTTPAnswerNot101() throws {
        try Self.withEchoServer { port in
            let wrongVersion = Self.upgrade.replacingOccurrences(of: "Version: 13", with: "Version: 8")
            var client = try RawHTTPClient(port: port)
            try client.send(wrongVersion)
            var response = try client.readResponse()
            #expect(response.status == 426)
            #expect(response.header("Sec-WebSocket-Version") == "13")
            let unknown = Self.upgrade.replacingOccurrences(of: "BLIP_3+CBMobile_3,BLIP_3+CBMobile_2", with: "BLIP_2")
            client = try RawHTTPClient(port: port)
            try client.send(unknown)
            response = try client.readResponse()
            #expect(response.status == 400)
            #expect(response.bodyText.contains("\"error\":\"bad_request\""))
        }
    }

    @Test func theUpgradeWorksOnATLSPortToo() throws {
        let key = try TLSPrivateKey.generateP256()
        let certificate = try TLSCertificate.selfSigned(
            key: key, commonName: "couchlite test", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"],
            validityDays: 1)
        try Self.withEchoServer(tls: try TLSContext.server(certificate: certificate, key: key)) { port in
            let client = try RawHTTPClient(port: port)
            let flags = fcntl(client.descriptor, F_GETFL, 0)
            _ = fcntl(client.descriptor, F_SETFL, flags | O_NONBLOCK)
            let stream = try TLSStream.client(
                context: try TLSContext.client(trust: .pinned(certificate.fingerprint)), descriptor: client.descriptor,
                host: "127.0.0.1")
            try stream.handshake(timeout: .seconds(5))
            try stream.send(Array(Self.upgrade.utf8) + clientFrame(0x2, [7, 7, 7]), timeout: .seconds(5))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            let expected: [UInt8] = [0x82, 0x03, 7, 7, 7]
            while !(received.count >= expected.count && received.suffix(expected.count).elementsEqual(expected)) {
                let count = try buffer.withUnsafeMutableBytes { try stream.receive(into: $0, timeout: .seconds(5)) }
                guard count > 0 else { break }
                received += buffer[0..<count]
            }
            let text = String(decoding: received, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
            #expect(text.contains("Sec-WebSocket-Accept: BDQST+wiMNbIeQKNNSjAs0XuuLY=\r\n"))
            #expect(received.suffix(expected.count).elementsEqual(expected))
        }
    }
}
