import CMalloc
import Testing

@testable import Blip

/// Heap bytes in use: glibc's allocated chunks in every arena plus mmapped blocks.
private func heapInUse() -> Int {
    let info = mallinfo2()
    return Int(info.uordblks) + Int(info.hblkhd)
}

/// Tens of thousands of messages through one pair of connections: the running checksums and deflate streams carry
/// on, numbers keep increasing, and memory stays flat (nothing per message is kept once it is answered).
@Suite struct BlipLongRunTests {
    @Test func sixtyThousandMessagesKeepMemoryFlat() throws {
        let pair = BlipPair()
        let rounds = 30_000
        var received = 0
        // The heap is the whole process's, and other suites run alongside: compare the lowest of 20 samples early
        // with the lowest of 20 samples at the end. A leak of these 1 KiB bodies would add 50 MB or more.
        var early: [Int] = []
        var late: [Int] = []
        let filler = [UInt8](repeating: 0x7A, count: 1000)
        for round in 0..<rounds {
            let body = Array("[[\(round),\"doc-\(round)\",\"1-\(String(round, radix: 16))\"]]".utf8) + filler
            let number = try pair.client.send(.request(profile: "changes", body: body, compressed: round % 2 == 0))
            #expect(number == UInt64(round + 1))
            let toServer = try pair.exchange().server
            guard toServer.count == 1, toServer[0].body == body else {
                Issue.record("round \(round): \(toServer.count) messages")
                return
            }
            try pair.server.respond(to: number, with: .response(body: filler, compressed: round % 3 == 0))
            received += try pair.exchange().client.count
            if round % 100 == 0 && round >= 2_000 && round < 4_000 { early.append(heapInUse()) }
            if round % 100 == 0 && round >= rounds - 2_000 { late.append(heapInUse()) }
        }
        #expect(received == rounds)
        #expect(pair.client.awaitingReplyCount == 0 && pair.server.unansweredRequestCount == 0)
        #expect(pair.client.queuedBytes == 0 && pair.server.queuedBytes == 0)
        #expect(pair.client.partialIncomingCount == 0 && pair.server.partialIncomingCount == 0)
        let grown = (late.min() ?? 0) - (early.min() ?? 0)
        #expect(grown < 16 * 1024 * 1024, "the heap's floor rose by \(grown) bytes over 52,000 messages")
    }
}
