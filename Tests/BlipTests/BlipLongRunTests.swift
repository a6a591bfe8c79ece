import Testing

@testable import Blip

/// Tens of thousands of messages through one pair of connections: the running checksums and deflate streams carry
/// on, numbers keep increasing, and memory stays flat (nothing per message is kept once it is answered).
@Suite struct BlipLongRunTests {
    @Test func fortyThousandMessagesKeepMemoryFlat() throws {
        let pair = BlipPair()
        var baseline = 0
        var received = 0
        for round in 0..<20_000 {
            let body = Array("[[\(round),\"doc-\(round)\",\"1-\(String(round, radix: 16))\"]]".utf8)
            let number = try pair.client.send(.request(profile: "changes", body: body, compressed: round % 2 == 0))
            #expect(number == UInt64(round + 1))
            let toServer = try pair.exchange().server
            guard toServer.count == 1, toServer[0].body == body else {
                Issue.record("round \(round): \(toServer.count) messages")
                return
            }
            try pair.server.respond(to: number, with: .response(body: Array("[]".utf8), compressed: round % 3 == 0))
            received += try pair.exchange().client.count
            if round == 2_000 { baseline = residentBytes() }
        }
        #expect(received == 20_000)
        #expect(pair.client.awaitingReplyCount == 0 && pair.server.unansweredRequestCount == 0)
        #expect(pair.client.queuedBytes == 0 && pair.server.queuedBytes == 0)
        let grown = residentBytes() - baseline
        #expect(grown < 8 * 1024 * 1024, "resident memory grew by \(grown) bytes over 36,000 messages")
    }
}
