import Blip
import CouchWire
import Foundation
import Testing

@testable import CouchServer

#if canImport(Glibc)
    import Glibc
#endif

/// A route that answers with `Response.webSocket` goes through the app like any other: its row decides who may
/// call it (401/403/404 as HTTP, never a 101), refused handshakes are answered as HTTP, and an accepted one becomes
/// a WebSocket on the same connection. The row here is a test's own (no route of the server upgrades yet:
/// `/{db}/_blipsync` waits for the sync protocol, issue 39 item 3, and must not answer 101 before it exists).
@Suite(.serialized) final class WebSocketRouteTests {
    /// A member-only row that upgrades and echoes binary messages.
    struct EchoRoutes: RouteCollection {
        var routes: [Route] {
            [
                Route([.GET], "/{db}/_test_websocket", .member) { context in
                    let handshake: WebSocketHandshake
                    do throws(WebSocketHandshake.Failure) {
                        handshake = try WebSocketHandshake(
                            request: context.request.head, supportedProtocols: ["BLIP_3+CBMobile_3"])
                    } catch {
                        return .webSocketRefusal(error)
                    }
                    return .webSocket(handshake) { channel in
                        while case .message(let message) = channel.receive() { try? channel.send(message) }
                    }
                },
                // BLIP over the WebSocket: every request is answered with its profile and body.
                Route([.GET], "/{db}/_test_blip", .member) { context in
                    let handshake: WebSocketHandshake
                    do throws(WebSocketHandshake.Failure) {
                        handshake = try WebSocketHandshake(
                            request: context.request.head, supportedProtocols: ["BLIP_3+CBMobile_3"])
                    } catch {
                        return .webSocketRefusal(error)
                    }
                    return .webSocket(handshake) { channel in
                        let blip = BlipWebSocket(channel: channel)
                        blip.run { message in
                            guard message.type == .request, !message.isNoReply else { return }
                            try? blip.connection.respond(
                                to: message.number,
                                with: .response(
                                    properties: ["echo": message.profile ?? ""], body: message.body,
                                    compressed: message.isCompressed))
                        }
                    }
                },
            ]
        }
    }

    let server: InProcessServer
    let http: HTTPServer
    let port: Int

    init() throws {
        server = try InProcessServer(product: { _ in [EchoRoutes()] })
        try server.createDatabase("db")
        let app = server.app
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.headerTimeout = .seconds(5)
        http = HTTPServer(configuration: configuration) { head, body, writer in app.handle(head, body, writer) }
        port = try http.start()
    }

    deinit {
        http.shutdown(timeout: .seconds(2))
        server.shutdown()
    }

    func upgrade(_ path: String, as user: Credentials? = InProcessServer.admin, version: String = "13") -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            + "Sec-WebSocket-Version: \(version)\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            + "Sec-WebSocket-Protocol: BLIP_3+CBMobile_3,BLIP_3+CBMobile_2\r\n"
            + (user.map { "Authorization: \($0.header)\r\n" } ?? "") + "\r\n"
    }

    @Test func theRowAuthorizesBeforeAnyUpgrade() throws {
        let anonymous = try WireClient(port: port)
        try anonymous.send(Array(upgrade("/db/_test_websocket", as: nil).utf8))
        let refused = try anonymous.readHead()
        #expect(refused.hasPrefix("HTTP/1.1 401 "))
        let wrong = try WireClient(port: port)
        try wrong.send(Array(upgrade("/db/_test_websocket", as: Credentials("admin", "wrong")).utf8))
        #expect(try wrong.readHead().hasPrefix("HTTP/1.1 401 "))
        let missing = try WireClient(port: port)
        try missing.send(Array(upgrade("/nodb/_test_websocket").utf8))
        #expect(try missing.readHead().hasPrefix("HTTP/1.1 404 "))
    }

    @Test func anAuthorizedUpgradeBecomesAWebSocketOnTheSameConnection() throws {
        let client = try WireClient(port: port)
        try client.send(Array(upgrade("/db/_test_websocket").utf8))
        let head = try client.readHead()
        #expect(head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        #expect(head.contains("Sec-WebSocket-Protocol: BLIP_3+CBMobile_3\r\n"))
        // A masked binary frame [1, 2, 3] comes back unmasked.
        try client.send([0x82, 0x83, 0x0F, 0x0F, 0x0F, 0x0F, 0x0E, 0x0D, 0x0C])
        #expect(try client.read(5) == [0x82, 0x03, 1, 2, 3])
    }

    @Test func aRefusedHandshakeIsAnsweredAsHTTP() throws {
        let client = try WireClient(port: port)
        try client.send(Array(upgrade("/db/_test_websocket", version: "8").utf8))
        let head = try client.readHead()
        #expect(head.hasPrefix("HTTP/1.1 426 "))
        #expect(head.contains("Sec-WebSocket-Version: 13\r\n"))
        // In memory there is no connection to hand over: the upgrade is answered as an error, never a fake 101.
        var headers: HTTPHeaders = [
            "Host": "127.0.0.1", "Authorization": InProcessServer.admin.header, "Connection": "Upgrade",
            "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
        ]
        headers.add("Sec-WebSocket-Protocol", "BLIP_3+CBMobile_3")
        let sink = MemoryResponseSink(isHEAD: false)
        server.app.respond(
            HTTPRequestHead(method: "GET", target: "/db/_test_websocket", headers: headers), HTTPRequestBody(bytes: []),
            to: sink)
        #expect(sink.status == 500)
    }

    @Test func blipsyncDoesNotUpgradeBeforeTheSyncProtocolExists() throws {
        let client = try WireClient(port: port)
        try client.send(Array(upgrade("/db/_blipsync").utf8))
        let head = try client.readHead()
        #expect(!head.hasPrefix("HTTP/1.1 101"))
        #expect(head.hasPrefix("HTTP/1.1 4"))
    }
}

extension WebSocketRouteTests {
    /// A client frame, masked with a fixed key.
    static func masked(_ opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let key: [UInt8] = [0x11, 0x22, 0x33, 0x44]
        var out: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            out.append(0x80 | UInt8(payload.count))
        } else {
            out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        return out + key + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    @Test func blipRequestsAsLiteCoreFramesThemAreAnsweredOverTheWebSocket() throws {
        let client = try WireClient(port: port)
        try client.send(Array(upgrade("/db/_test_blip").utf8))
        #expect(try client.readHead().hasPrefix("HTTP/1.1 101 "))
        // Our client connection frames getCheckpoint and a compressed proposeChanges as LiteCore 3.2 does
        // (BlipLiteCoreFramesTests checks those bytes against the recording).
        let blip = BlipConnection()
        try blip.send(.request(profile: "getCheckpoint", properties: ["client": "cp-xbgfHZG8FUj5bb4j5q0k4zVt+pc="]))
        let body = Array(#"[["doc1","1-285e1d4b9d4e1f7660e46157c1a96a42300729b3","",106]]"#.utf8)
        try blip.send(.request(profile: "proposeChanges", body: body, urgent: true, compressed: true))
        while let frame = try blip.nextFrame() { try client.send(Self.masked(0x2, frame)) }
        var replies: [BlipMessage] = []
        while replies.count < 2 {
            let (opcode, payload) = try client.readFrame()
            #expect(opcode == 0x2)
            if let reply = try blip.receive(payload) { replies.append(reply) }
        }
        #expect(replies.map(\.number).sorted() == [1, 2])
        let byNumber = Dictionary(uniqueKeysWithValues: replies.map { ($0.number, $0) })
        #expect(byNumber[1]?.properties["echo"] == "getCheckpoint")
        #expect(byNumber[2]?.properties["echo"] == "proposeChanges")
        #expect(byNumber[2]?.body == body && byNumber[2]?.isCompressed == true)
        // The reply to an urgent request is urgent.
        #expect(byNumber[2]?.isUrgent == true)
    }

    @Test func aTextMessageClosesABlipConnectionWith1003() throws {
        let client = try WireClient(port: port)
        try client.send(Array(upgrade("/db/_test_blip").utf8))
        #expect(try client.readHead().hasPrefix("HTTP/1.1 101 "))
        try client.send(Self.masked(0x1, Array("hello".utf8)))
        let (opcode, payload) = try client.readFrame()
        #expect(opcode == 0x8 && Array(payload.prefix(2)) == [0x03, 0xEB])
    }

    @Test func aBadChecksumClosesABlipConnectionWith1002() throws {
        let client = try WireClient(port: port)
        try client.send(Array(upgrade("/db/_test_blip").utf8))
        #expect(try client.readHead().hasPrefix("HTTP/1.1 101 "))
        let blip = BlipConnection()
        try blip.send(.request(profile: "getCheckpoint"))
        var frame = try #require(try blip.nextFrame())
        frame[frame.count - 1] ^= 0xFF
        try client.send(Self.masked(0x2, frame))
        let (opcode, payload) = try client.readFrame()
        #expect(opcode == 0x8 && Array(payload.prefix(2)) == [0x03, 0xEA])
        #expect(String(decoding: payload.dropFirst(2), as: UTF8.self) == "BLIP frame checksum mismatch.")
    }
}

/// A blocking TCP client that speaks raw bytes, independent of the server code.
final class WireClient {
    let descriptor: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw InProcessFailure("connect failed: \(errno)") }
        var time = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw InProcessFailure("send failed") }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        guard count > 0 else { throw InProcessFailure("connection closed or timed out") }
        buffer += chunk[0..<count]
    }

    /// The response head through its empty line.
    func readHead() throws -> String {
        let end: [UInt8] = [13, 10, 13, 10]
        while true {
            if let range = buffer.firstRange(of: end) {
                let head = String(decoding: buffer[..<range.upperBound], as: UTF8.self)
                buffer.removeFirst(range.upperBound)
                return head
            }
            try fill()
        }
    }

    /// One WebSocket frame from the server (unmasked): its opcode and payload.
    func readFrame() throws -> (opcode: UInt8, payload: [UInt8]) {
        let head = try read(2)
        var length = Int(head[1] & 0x7F)
        if length == 126 {
            length = try read(2).reduce(0) { $0 << 8 | Int($1) }
        } else if length == 127 {
            length = try read(8).reduce(0) { $0 << 8 | Int($1) }
        }
        return (head[0] & 0x0F, try read(length))
    }

    func read(_ count: Int) throws -> [UInt8] {
        while buffer.count < count { try fill() }
        defer { buffer.removeFirst(count) }
        return Array(buffer[..<count])
    }
}
