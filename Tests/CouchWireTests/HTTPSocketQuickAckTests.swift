import Foundation
import Testing

@testable import CouchWire

#if os(Linux)
    import Glibc

    /// The server acknowledges at once whenever a read has to wait (issue 28): a client with Nagle's algorithm
    /// on (CouchDB's replicator) holds each small piece of a request until the previous one is acknowledged, and
    /// a delayed ACK made every `_revs_diff` and `_bulk_docs` it sent wait ~40 ms.
    @Suite struct HTTPSocketQuickAckTests {
        /// A connected loopback TCP pair: (client, server).
        private func tcpPair() throws -> (Int32, Int32) {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(listener) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, length) == 0 && listen(listener, 1) == 0
                        && getsockname(listener, $0, &length) == 0
                }
            }
            try #require(bound)
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
            }
            try #require(connected)
            let server = accept(listener, nil, nil)
            try #require(server >= 0)
            return (client, server)
        }

        private func quickAck(_ descriptor: Int32) -> Int32 {
            var value: Int32 = -1
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_QUICKACK, &value, &size)
            return value
        }

        @Test func aReadThatWaitsLeavesTheConnectionAcknowledgingAtOnce() throws {
            let (client, server) = try tcpPair()
            defer { close(client) }
            let socket = HTTPSocket(descriptor: server)
            defer { close(server) }
            var buffer = [UInt8](repeating: 0, count: 16)
            // A request answered at once: Linux now delays ACKs to piggyback them on the next answer.
            _ = Glibc.send(client, "a", 1, 0)
            let first = buffer.withUnsafeMutableBytes { socket.receive(into: $0, deadline: .after(.seconds(5))) }
            #expect(first == .received(1))
            try [UInt8]("b".utf8).withUnsafeBytes { try socket.send($0, stall: .seconds(5)) }
            #expect(recv(client, &buffer, 16, 0) == 1)
            #expect(quickAck(server) == 0, "the kernel did not enter delayed-ACK mode: nothing to test here")
            // The next piece comes later: the server's read waits for it, and acknowledges at once meanwhile.
            let sender = Thread {
                Thread.sleep(forTimeInterval: 0.1)
                _ = Glibc.send(client, "c", 1, 0)
            }
            sender.start()
            let second = buffer.withUnsafeMutableBytes { socket.receive(into: $0, deadline: .after(.seconds(5))) }
            #expect(second == .received(1))
            #expect(quickAck(server) == 1)
        }
    }
#endif
