import CouchWire
import Foundation
import Testing

@testable import Replicator

#if canImport(Glibc)
    import Glibc
#endif

/// The scripts a `FakePeer` has not played yet, shared with its connect closure.
final class Scripts: @unchecked Sendable {
    private let lock = NSLock()
    private var remaining: [[[UInt8]]]
    init(_ scripts: [[[UInt8]]]) { remaining = scripts }
    func next() -> [[UInt8]] {
        lock.lock()
        defer { lock.unlock() }
        return remaining.isEmpty ? [] : remaining.removeFirst()
    }
}

/// A peer on the other end of a socket pair: each connection reads one request and plays the next
/// script (pieces of bytes, then a half-close); an empty script is a peer that never answers.
struct FakePeer {
    let client: HTTPClient

    init(scripts: [[[UInt8]]]) {
        let scripts = Scripts(scripts)
        client = HTTPClient(
            peer: .local(
                name: "fake",
                connect: {
                    var pair: [Int32] = [-1, -1]
                    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return nil }
                    let script = scripts.next()
                    let fd = pair[0]
                    Thread.detachNewThread {
                        var buffer = [UInt8](repeating: 0, count: 65536)
                        _ = recv(fd, &buffer, buffer.count, 0)
                        guard !script.isEmpty else {
                            // Silent: wait until the client goes away.
                            _ = recv(fd, &buffer, buffer.count, 0)
                            close(fd)
                            return
                        }
                        for piece in script {
                            _ = piece.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        }
                        Glibc.shutdown(fd, Int32(SHUT_WR))
                        _ = recv(fd, &buffer, buffer.count, 0)
                        close(fd)
                    }
                    return pair[1]
                }))
    }
}

@Suite struct HTTPClientTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func chunkedResponseArrivingByteByByte() throws {
        let response =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
            + "5\r\n{\"a\":\r\n3;ext=1\r\n42}\r\n0\r\nTrailer: x\r\n\r\n"
        let peer = FakePeer(scripts: [Self.bytes(response).map { [$0] }])
        let reply = try peer.client.send(ClientRequest(method: "GET", target: "/"))
        #expect(reply.status == 200)
        #expect(try reply.json() == ["a": 42])
    }

    @Test func contentLengthBodyAndKeepAliveReuse() throws {
        let one = Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        let peer = FakePeer(scripts: [[one, one]])
        let first = try peer.client.send(ClientRequest(method: "GET", target: "/"))
        #expect(try first.json() == [:])
    }

    @Test func notHTTPIsAProtocolError() {
        let peer = FakePeer(scripts: [[Self.bytes("SSH-2.0-OpenSSH\r\n\r\n")]])
        #expect(throws: ReplicationError.self) { _ = try peer.client.send(ClientRequest(method: "GET", target: "/")) }
    }

    @Test func peerClosingMidBodyIsAReset() throws {
        let peer = FakePeer(scripts: [[Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")]])
        let reply = try peer.client.send(ClientRequest(method: "GET", target: "/"))
        #expect(throws: ReplicationError.connectionReset("fake")) { _ = try reply.readAll() }
    }

    @Test func peerClosingBeforeAnswerIsAReset() {
        let peer = FakePeer(scripts: [[Self.bytes("HTTP/1.1 2")]])
        #expect(throws: ReplicationError.connectionReset("fake")) {
            _ = try peer.client.send(ClientRequest(method: "GET", target: "/"))
        }
    }

    @Test func silentPeerTimesOut() {
        let peer = FakePeer(scripts: [[]])
        #expect(throws: ReplicationError.timeout("fake")) {
            _ = try peer.client.send(ClientRequest(method: "GET", target: "/", timeout: .milliseconds(200)))
        }
    }

    @Test func malformedChunkSizeIsAProtocolError() throws {
        let peer = FakePeer(scripts: [[Self.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")]])
        let reply = try peer.client.send(ClientRequest(method: "GET", target: "/"))
        #expect(throws: ReplicationError.protocolError("bad chunked response body")) { _ = try reply.readAll() }
    }

    @Test func hugeHeadIsRefused() {
        let head = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 300 * 1024)
        let peer = FakePeer(scripts: [[Self.bytes(head)]])
        #expect(throws: ReplicationError.protocolError("response head too large")) {
            _ = try peer.client.send(ClientRequest(method: "GET", target: "/"))
        }
    }

    @Test func refusedPortIsConnectionRefused() {
        // Port 1 on loopback: nothing listens there on a test machine.
        let client = HTTPClient(peer: .tcp(host: "127.0.0.1", port: 1))
        #expect(throws: ReplicationError.connectionRefused("127.0.0.1:1")) {
            _ = try client.send(ClientRequest(method: "GET", target: "/"))
        }
    }

    @Test func unresolvableHostIsUnreachable() {
        let client = HTTPClient(peer: .tcp(host: "no-such-host.invalid", port: 80))
        #expect(throws: ReplicationError.unreachable("no-such-host.invalid:80")) {
            _ = try client.send(ClientRequest(method: "GET", target: "/"))
        }
    }

    @Test func redirectIsReturnedNotFollowed() throws {
        let peer = FakePeer(scripts: [
            [Self.bytes("HTTP/1.1 302 Found\r\nLocation: http://elsewhere/db\r\nContent-Length: 0\r\n\r\n")]
        ])
        let reply = try peer.client.send(ClientRequest(method: "GET", target: "/"))
        #expect(reply.status == 302)
        #expect(reply.headers["Location"] == "http://elsewhere/db")
    }

    @Test func cancelStopsARequestInFlight() throws {
        let peer = FakePeer(scripts: [[]])
        let client = peer.client
        Thread.detachNewThread {
            usleep(100_000)
            client.cancel()
        }
        let started = Date()
        #expect(throws: ReplicationError.self) {
            _ = try client.send(ClientRequest(method: "GET", target: "/", timeout: .seconds(10)))
        }
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(throws: ReplicationError.cancelled) { _ = try client.send(ClientRequest(method: "GET", target: "/")) }
    }
}
