import CouchWire
import Foundation
import Testing

@testable import Replicator

#if canImport(Glibc)
    import Glibc
#endif

/// A peer on the other end of a socket pair that reads one request, then runs `play` with the socket
/// (until it returns or the client goes away): the attacks of issue 29 item 5.
private func hostilePeer(_ play: @escaping @Sendable (Int32) -> Void) -> HTTPClient {
    HTTPClient(
        peer: .local(
            name: "hostile",
            connect: {
                var pair: [Int32] = [-1, -1]
                guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return nil }
                let fd = pair[0]
                Thread.detachNewThread {
                    var buffer = [UInt8](repeating: 0, count: 65536)
                    _ = recv(fd, &buffer, buffer.count, 0)
                    play(fd)
                    close(fd)
                }
                return pair[1]
            }))
}

/// Sends every byte; false once the client has gone.
@discardableResult
private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let sent = bytes.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return 0 }
            return send(fd, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
        }
        if sent <= 0 { return false }
        offset += sent
    }
    return true
}

@Suite struct HostilePeerTests {
    @Test func anEndlessChunkedReplyStopsAtItsLimit() {
        let client = hostilePeer { fd in
            write(fd, Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
            let piece = Array(#"{"a":["1-abc","#.utf8) + Array(repeating: UInt8(ascii: " "), count: 60_000)
            let chunk = Array(String(piece.count, radix: 16).utf8) + [13, 10] + piece + [13, 10]
            while write(fd, chunk) {}
        }
        #expect {
            let reply = try client.send(ClientRequest(method: "POST", target: "/db/_revs_diff"))
            _ = try reply.json(limit: 1 << 20)
        } throws: { error in
            "\(error)".contains("the reply of hostile to POST /db/_revs_diff is larger than 1 MiB")
        }
    }

    @Test func aReplyOfTinyContainersIsParsedWithinTheServersBudget() {
        // 4 bytes per `[0]`, about 80 once parsed: over the server's budget for a 16 MB body.
        let body = "[" + String(repeating: "[0],", count: 4_150_000) + "[0]]"
        let client = hostilePeer { fd in
            write(fd, Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))
        }
        #expect {
            _ = try client.send(ClientRequest(method: "POST", target: "/db/_revs_diff")).json(limit: 16 << 20)
        } throws: { error in
            "\(error)".contains("is not JSON we accept")
        }
    }

    @Test func aPeerDrippingItsHeadFailsAsTooSlow() {
        let client = hostilePeer { fd in
            for byte in Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".utf8) {
                guard write(fd, [byte]) else { return }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        let start = ContinuousClock.now
        #expect {
            _ = try client.send(ClientRequest(method: "GET", target: "/db/", timeout: .milliseconds(300)))
        } throws: { error in
            guard case .tooSlow(let peer, let detail)? = error as? ReplicationError else { return false }
            return peer == "hostile" && detail.contains("GET /db/")
        }
        #expect(ContinuousClock.now - start < .seconds(3))
    }

    @Test func aPeerDrippingItsBodyFailsAsTooSlow() {
        let client = hostilePeer { fd in
            guard write(fd, Array("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".utf8)) else { return }
            for _ in 0..<100 {
                guard write(fd, [UInt8(ascii: " ")]) else { return }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        let start = ContinuousClock.now
        #expect {
            let reply = try client.send(ClientRequest(method: "GET", target: "/db/", timeout: .milliseconds(300)))
            _ = try reply.json()
        } throws: { error in
            guard case .tooSlow = error as? ReplicationError else { return false }
            return "\(error)".contains("hostile is too slow: its reply to GET /db/ was not complete")
        }
        #expect(ContinuousClock.now - start < .seconds(3))
    }
}
