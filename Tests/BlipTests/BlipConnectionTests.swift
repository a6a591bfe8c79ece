import Testing

@testable import Blip

@Suite struct BlipConnectionTests {
    // MARK: - Requests and replies, both ways

    @Test func requestsFlowBothWaysAndRepliesFindTheirRequests() throws {
        let pair = BlipPair()
        let first = try pair.client.send(.request(profile: "getCheckpoint", properties: ["client": "cp-1"]))
        let second = try pair.client.send(.request(profile: "subChanges"))
        #expect((first, second) == (1, 2))
        var (toClient, toServer) = try pair.exchange()
        #expect(toClient.isEmpty)
        #expect(toServer.map(\.number) == [1, 2])
        #expect(toServer.map(\.profile) == ["getCheckpoint", "subChanges"])
        // The server answers #2 first, with an error, and sends its own request #1 (a different message).
        try pair.server.respond(to: 2, with: .response())
        try pair.server.respond(to: 1, with: .error(domain: "HTTP", code: 404, message: "missing"))
        let ours = try pair.server.send(.request(profile: "changes", body: Array("[]".utf8)))
        #expect(ours == 1)
        (toClient, toServer) = try pair.exchange()
        #expect(toServer.isEmpty)
        #expect(toClient.map(\.type) == [.response, .error, .request])
        #expect(toClient[1].properties["Error-Domain"] == "HTTP" && toClient[1].properties["Error-Code"] == "404")
        #expect(toClient[1].body == Array("missing".utf8))
        #expect(toClient[2].body == Array("[]".utf8))
        #expect(pair.client.awaitingReplyCount == 0)
        #expect(pair.client.unansweredRequestCount == 1)
    }

    @Test func noReplyRequestsWantNoReply() throws {
        let pair = BlipPair()
        try pair.server.send(.request(profile: "norev", noReply: true))
        let received = try pair.exchange().client
        #expect(received.first?.isNoReply == true)
        #expect(throws: BlipError.invalidMessage("No request #1 waits for a reply.")) {
            try pair.client.respond(to: 1, with: .response())
        }
        #expect(pair.server.awaitingReplyCount == 0)
    }

    @Test func aSecondReplyToTheSameRequestIsRefused() throws {
        let pair = BlipPair()
        try pair.client.send(.request(profile: "rev"))
        try pair.exchange()
        try pair.server.respond(to: 1, with: .response())
        #expect(throws: BlipError.invalidMessage("No request #1 waits for a reply.")) {
            try pair.server.respond(to: 1, with: .response())
        }
    }

    @Test func repliesToUrgentRequestsAreUrgent() throws {
        let pair = BlipPair()
        try pair.client.send(.request(profile: "changes", urgent: true))
        try pair.exchange()
        try pair.server.respond(to: 1, with: .response())
        let frame = try #require(try pair.server.nextFrame())
        #expect(frameFlags(frame) == 0x11)
    }

    // MARK: - Frames: splitting, interleaving, priority, compression

    @Test(arguments: [false, true]) func bigMessagesAreSplitIntoFramesOfAtMost16KiB(compressed: Bool) throws {
        let server = BlipConnection()
        let client = BlipConnection()
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let body = (0..<300_000).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        try client.send(.request(profile: "rev", body: body, compressed: compressed))
        var frames = 0
        var received: BlipMessage?
        while let frame = try client.nextFrame() {
            #expect(frame.count <= BlipLimits.bigFrameBytes)
            frames += 1
            received = try server.receive(frame) ?? received
            while let ack = try server.nextFrame() { _ = try client.receive(ack) }
        }
        #expect(frames >= 300_000 / BlipLimits.bigFrameBytes)
        #expect(received?.body == body)
    }

    @Test func messagesInterleaveOneFrameEachInTurn() throws {
        let client = BlipConnection()
        try client.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 40_000)))
        try client.send(.request(profile: "rev", body: [UInt8](repeating: 2, count: 40_000)))
        var numbers: [UInt64] = []
        while let frame = try client.nextFrame() { numbers.append(frameNumber(frame) ?? 0) }
        #expect(numbers == [1, 2, 1, 2, 1, 2])
    }

    @Test func urgentMessagesGoAheadOfStartedOnesButNeverOfAnUnstartedRequest() throws {
        // #1 and #2 have both started: urgent #3 goes next after the front message, ahead of #2.
        let started = BlipConnection()
        try started.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 60_000)))
        try started.send(.request(profile: "rev", body: [UInt8](repeating: 2, count: 60_000)))
        _ = try started.nextFrame()
        _ = try started.nextFrame()
        try started.send(.request(profile: "changes", body: [UInt8](repeating: 3, count: 10), urgent: true))
        var order: [UInt64] = []
        while let frame = try started.nextFrame() { order.append(frameNumber(frame) ?? 0) }
        #expect(Array(order.prefix(3)) == [1, 3, 2])
        // #2 has not started: urgent #3 waits behind it, so first frames leave in number order.
        let unstarted = BlipConnection()
        try unstarted.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 60_000)))
        _ = try unstarted.nextFrame()
        try unstarted.send(.request(profile: "rev", body: [UInt8](repeating: 2, count: 10)))
        try unstarted.send(.request(profile: "changes", body: [UInt8](repeating: 3, count: 10), urgent: true))
        order = []
        while let frame = try unstarted.nextFrame() { order.append(frameNumber(frame) ?? 0) }
        let firstOfTwo = try #require(order.firstIndex(of: 2))
        let firstOfThree = try #require(order.firstIndex(of: 3))
        #expect(firstOfTwo < firstOfThree)
    }

    @Test func aNormalMessageSendsSmallFramesWhileAnUrgentOneWaits() throws {
        let client = BlipConnection()
        try client.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 100_000)))
        #expect(try client.nextFrame()?.count == BlipLimits.bigFrameBytes)
        try client.send(.request(profile: "changes", body: [UInt8](repeating: 3, count: 10_000), urgent: true))
        var frames: [(UInt64, Int)] = []
        for _ in 0..<2 {
            if let frame = try client.nextFrame() { frames.append((frameNumber(frame) ?? 0, frame.count)) }
        }
        #expect(frames.map(\.0) == [1, 2])
        #expect(frames.map(\.1) == [BlipLimits.smallFrameBytes, 10_000 + 2 + 17 + 4])
    }

    // MARK: - Flow control

    @Test func acksAreSentEvery50000BytesWithTheTotalCount() throws {
        let pair = BlipPair()
        try pair.client.send(.request(profile: "rev", body: [UInt8](repeating: 7, count: 200_000)))
        var acks: [[UInt8]] = []
        while let frame = try pair.client.nextFrame() {
            _ = try pair.server.receive(frame)
            while let reply = try pair.server.nextFrame() {
                acks.append(reply)
                _ = try pair.client.receive(reply)
            }
        }
        #expect(acks.count == 3)
        for ack in acks {
            // #1, ACKMSG | urgent | noreply, then the varint of the bytes received so far (no checksum).
            #expect(Array(ack.prefix(2)) == [0x01, 0x34])
            guard case .value(let count, let length) = BlipVarint.read(ack.dropFirst(2)) else {
                Issue.record("bad ack")
                continue
            }
            #expect(ack.count == 2 + length)
            #expect(count >= 50_000 && count % UInt64(BlipLimits.bigFrameBytes - 2) == 0)
        }
    }

    @Test func aPeerThatStopsAckingStallsOurMessagesAndCannotGrowTheOutbox() throws {
        let limits = BlipLimits(maxOutboxBytes: 2 * 1024 * 1024)
        let server = BlipConnection(limits: limits)
        let client = BlipConnection()
        let body = [UInt8](repeating: 9, count: 1024 * 1024)
        try server.send(.request(profile: "rev", body: body))
        // The client receives every frame, but its ACKs are held back: the server stops near 128,000 bytes.
        var heldAcks: [[UInt8]] = []
        var sent = 0
        func pump() throws -> [BlipMessage] {
            var received: [BlipMessage] = []
            while let frame = try server.nextFrame() {
                sent += frame.count
                if let message = try client.receive(frame) { received.append(message) }
                while let ack = try client.nextFrame() { heldAcks.append(ack) }
            }
            return received
        }
        #expect(try pump().isEmpty)
        #expect(sent < BlipLimits.maxUnackedBytes + BlipLimits.bigFrameBytes)
        #expect(server.pausedMessageCount == 1)
        #expect(!server.hasFrameToSend)
        #expect(server.queuedBytes > body.count - sent)
        // More messages pile up only to the outbox limit, however long the peer stays silent.
        try server.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 900_000)))
        #expect(throws: BlipError.outboxFull) {
            try server.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 400_000)))
        }
        #expect(server.queuedBytes <= limits.maxOutboxBytes)
        // The second message also stops at its own 128,000 unacknowledged bytes.
        _ = try pump()
        #expect(server.pausedMessageCount == 2)
        // Once the ACKs arrive, everything does.
        var received: [BlipMessage] = []
        while !heldAcks.isEmpty {
            for ack in heldAcks { _ = try server.receive(ack) }
            heldAcks = []
            received += try pump()
        }
        #expect(received.map(\.body.count).sorted() == [900_000, body.count])
        #expect(server.queuedBytes == 0)
    }

    @Test func acksOfUnknownMessagesOrForMoreThanWasSentAreIgnored() throws {
        let client = BlipConnection()
        try client.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 300_000)))
        var sent = 0
        while let frame = try client.nextFrame() { sent += frame.count }
        #expect(client.pausedMessageCount == 1)
        // ACKMSG #9 (no such message), ACKRPY #1 (we sent no reply #1), #1 with more bytes than sent, a bad varint.
        for ack: [UInt8] in [
            [0x09, 0x34, 0x10], [0x01, 0x35, 0x10], [0x01, 0x34] + BlipVarint.encode(1 << 40), [0x01, 0x34, 0x80],
        ] {
            #expect(try client.receive(ack) == nil)
        }
        #expect(client.pausedMessageCount == 1)
        #expect(try client.receive([0x01, 0x34] + BlipVarint.encode(UInt64(sent - 2 * 8))) == nil)
        #expect(client.pausedMessageCount == 0)
    }

    // MARK: - Broken and hostile frames

    @Test func badChecksumIsRefused() throws {
        var frame = BlipConnectionTests.requestFrame()
        frame[frame.count - 1] ^= 0x01
        #expect(throws: BlipError.corrupt("BLIP frame checksum mismatch.")) { try BlipConnection().receive(frame) }
    }

    @Test func truncatedFramesAreRefused() throws {
        let whole = BlipConnectionTests.requestFrame()
        for cut in [0, 1, 2, 3, 4, 5] {
            #expect(throws: BlipError.self) { try BlipConnection().receive(Array(whole.prefix(cut))) }
        }
        // A frame that ends before the properties its length announced.
        let short = BlipConnectionTests.frame(number: 1, flags: 0x00, data: [0x10] + Array("Profile\u{0}".utf8))
        #expect(throws: BlipError.protocolViolation("A BLIP message ends before its properties.")) {
            try BlipConnection().receive(short)
        }
    }

    @Test func aFailedConnectionRefusesEverythingAfter() throws {
        let connection = BlipConnection()
        #expect(throws: BlipError.self) { try connection.receive([0x80]) }
        #expect(throws: BlipError.protocolViolation("Bad BLIP frame header.")) {
            try connection.receive(BlipConnectionTests.requestFrame())
        }
        #expect(throws: BlipError.protocolViolation("Bad BLIP frame header.")) {
            try connection.send(.request(profile: "x"))
        }
    }

    @Test func requestsOutOfSequenceAreRefused() throws {
        let skipping = BlipConnectionTests.frame(number: 2, flags: 0x00, data: [0x00])
        #expect(throws: BlipError.protocolViolation("Request #2 out of sequence (the last was #0).")) {
            try BlipConnection().receive(skipping)
        }
        let connection = BlipConnection()
        _ = try connection.receive(BlipConnectionTests.frame(number: 1, flags: 0x00, data: [0x00]))
        let again = BlipConnectionTests.frame(
            number: 1, flags: 0x00, data: [0x00], seed: BlipConnectionTests.crc([0x00]))
        #expect(throws: BlipError.self) { try connection.receive(again) }
    }

    @Test func repliesToNoRequestAreRefused() throws {
        let reply = BlipConnectionTests.frame(number: 1, flags: 0x01, data: [0x00])
        #expect(throws: BlipError.protocolViolation("Reply #1 to no request waiting for one.")) {
            try BlipConnection().receive(reply)
        }
        // Nor may a reply start before our request was completely sent.
        let client = BlipConnection()
        try client.send(.request(profile: "rev", body: [UInt8](repeating: 1, count: 40_000)))
        _ = try client.nextFrame()
        #expect(throws: BlipError.self) { try client.receive(reply) }
    }

    @Test func propertiesOver100KiBAreRefusedFromTheirLength() throws {
        let frame = BlipConnectionTests.frame(number: 1, flags: 0x40, data: BlipVarint.encode(100 * 1024 + 1))
        #expect(throws: BlipError.tooBig("Message properties longer than 102400 bytes.")) {
            try BlipConnection().receive(frame)
        }
    }

    @Test func malformedPropertiesAreRefused() throws {
        let data: [UInt8] = [0x04] + Array("a\u{0}bc".utf8)
        #expect(throws: BlipError.protocolViolation("Message properties are not NUL-terminated.")) {
            try BlipConnection().receive(BlipConnectionTests.frame(number: 1, flags: 0x00, data: data))
        }
    }

    @Test func deflateBombIsStoppedAtTheMessageLimit() throws {
        // 256 MiB of zeros deflate to about 256 KB; the receiver stops after 1 MiB of output.
        let bomb = deflatedZeros(256 * 1024 * 1024)
        #expect(bomb.count < 300_000)
        let limits = BlipLimits(maxIncomingMessageBytes: 1024 * 1024)
        var frame: [UInt8] = [0x01, 0x08] + bomb
        frame += [0, 0, 0, 0]
        let before = residentBytes()
        #expect(throws: BlipError.tooBig("A message longer than 1048576 bytes.")) {
            try BlipConnection(limits: limits).receive(frame)
        }
        #expect(residentBytes() - before < 64 * 1024 * 1024)
    }

    @Test func aCompressedFrameWithNoDataIsEmptyNotCorrupt() throws {
        // A first frame with the properties length, then an empty compressed frame, then the rest compressed.
        let sender = BlipConnection()
        try sender.send(.request(profile: "rev", body: [UInt8](repeating: 0x61, count: 100), compressed: true))
        let whole = try #require(try sender.nextFrame())
        let receiver = BlipConnection()
        let seed = BlipConnectionTests.crc([])
        let empty: [UInt8] = [
            0x01, 0x48, UInt8(seed >> 24), UInt8((seed >> 16) & 0xFF), UInt8((seed >> 8) & 0xFF), UInt8(seed & 0xFF),
        ]
        #expect(try receiver.receive(empty) == nil)
        let message = try #require(try receiver.receive(whole))
        #expect(message.profile == "rev" && message.body.count == 100)
    }

    @Test func garbageInACompressedFrameIsRefused() throws {
        let frame: [UInt8] = [0x01, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]
        #expect(throws: BlipError.self) { try BlipConnection().receive(frame) }
    }

    @Test func tooManyPartialMessagesAreRefused() throws {
        let connection = BlipConnection(limits: BlipLimits(maxPartialIncomingMessages: 4))
        var seed: UInt32 = 0
        for number in 1...4 {
            let data: [UInt8] = [0x00]
            _ = try connection.receive(
                BlipConnectionTests.frame(number: UInt64(number), flags: 0x40, data: data, seed: seed))
            seed = BlipConnectionTests.crc(data, seed: seed)
        }
        #expect(connection.partialIncomingCount == 4)
        #expect(throws: BlipError.tooBig("More than 4 messages partly received.")) {
            try connection.receive(BlipConnectionTests.frame(number: 5, flags: 0x40, data: [0x00], seed: seed))
        }
    }

    @Test func oversizedMessageAcrossFramesIsRefused() throws {
        let connection = BlipConnection(limits: BlipLimits(maxIncomingMessageBytes: 10_000))
        var seed: UInt32 = 0
        var data: [UInt8] = [0x00] + [UInt8](repeating: 1, count: 4_999)
        _ = try connection.receive(BlipConnectionTests.frame(number: 1, flags: 0x40, data: data, seed: seed))
        seed = BlipConnectionTests.crc(data, seed: seed)
        data = [UInt8](repeating: 1, count: 5_000)
        _ = try connection.receive(BlipConnectionTests.frame(number: 1, flags: 0x40, data: data, seed: seed))
        seed = BlipConnectionTests.crc(data, seed: seed)
        #expect(throws: BlipError.tooBig("A message longer than 10000 bytes.")) {
            try connection.receive(BlipConnectionTests.frame(number: 1, flags: 0x00, data: [1], seed: seed))
        }
    }

    @Test func oversizedFrameIsRefusedBeforeItIsRead() throws {
        let connection = BlipConnection(limits: BlipLimits(maxIncomingFrameBytes: 1000))
        let data: [UInt8] = [0x00] + [UInt8](repeating: 1, count: 995)
        #expect(throws: BlipError.tooBig("A BLIP frame longer than 1000 bytes.")) {
            try connection.receive(BlipConnectionTests.frame(number: 1, flags: 0x00, data: data))
        }
        let fits = BlipConnection(limits: BlipLimits(maxIncomingFrameBytes: 1000))
        #expect(
            try fits.receive(BlipConnectionTests.frame(number: 1, flags: 0x00, data: Array(data.prefix(994)))) != nil)
    }

    @Test func halfSentMessagesTogetherCannotPassThePartialLimit() throws {
        // Each message alone is within its limit; together the unfinished ones are not.
        let connection = BlipConnection(
            limits: BlipLimits(maxIncomingMessageBytes: 10_000, maxPartialIncomingBytes: 20_000))
        var seed: UInt32 = 0
        let data: [UInt8] = [0x00] + [UInt8](repeating: 1, count: 8_999)
        for number in 1...2 {
            _ = try connection.receive(
                BlipConnectionTests.frame(number: UInt64(number), flags: 0x40, data: data, seed: seed))
            seed = BlipConnectionTests.crc(data, seed: seed)
        }
        #expect(throws: BlipError.tooBig("Partly received messages over 20000 bytes.")) {
            try connection.receive(BlipConnectionTests.frame(number: 3, flags: 0x40, data: data, seed: seed))
        }
    }

    @Test func reservedFrameTypesAreIgnored() throws {
        let connection = BlipConnection()
        #expect(try connection.receive([0x01, 0x03, 1, 2, 3]) == nil)
        #expect(try connection.receive([0x01, 0x07]) == nil)
        // And leave the checksum and numbering alone.
        #expect(try connection.receive(BlipConnectionTests.requestFrame())?.profile == "getCheckpoint")
    }

    // MARK: - Helpers

    /// An uncompressed single frame built by hand, with its CRC continuing `seed`.
    static func frame(number: UInt64, flags: UInt8, data: [UInt8], seed: UInt32 = 0) -> [UInt8] {
        let crc = crc(data, seed: seed)
        return BlipVarint.encode(number) + [flags] + data
            + [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
    }

    /// CRC-32 (IEEE, reflected, as zlib's), written out here so the tests do not check zlib with zlib.
    static func crc(_ data: [UInt8], seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func requestFrame() -> [UInt8] {
        let props = Array("Profile\u{0}getCheckpoint\u{0}".utf8)
        return frame(number: 1, flags: 0x00, data: BlipVarint.encode(UInt64(props.count)) + props)
    }
}
