import Testing

@testable import Discovery

@Suite struct DNSMessageTests {
    static func name(_ text: String) -> DNSName {
        guard let name = DNSName(text) else {
            Issue.record("bad test name \(text)")
            return .root
        }
        return name
    }

    /// A header with the given counts, then `body`.
    static func packet(
        questions: UInt16 = 0, answers: UInt16 = 0, authorities: UInt16 = 0, additionals: UInt16 = 0,
        flags: UInt16 = 0x8400, _ body: [UInt8]
    ) -> [UInt8] {
        var bytes: [UInt8] = [0, 0, UInt8(flags >> 8), UInt8(flags & 0xFF)]
        for count in [questions, answers, authorities, additionals] {
            bytes += [UInt8(count >> 8), UInt8(count & 0xFF)]
        }
        return bytes + body
    }

    static func sample() -> DNSMessage {
        var message = DNSMessage()
        message.isResponse = true
        message.authoritative = true
        let type = name("_photodrop._tcp.local")
        let instance = type.prepending(label: Array("Anna's laptop (2)".utf8)) ?? type
        let host = name("anna-couchlite.local")
        message.questions = [DNSQuestion(name: type, type: .ptr, unicastResponse: true)]
        message.answers = [DNSRecord(name: type, data: .ptr(instance), ttl: 4500)]
        message.additionals = [
            DNSRecord(
                name: instance, data: .srv(priority: 0, weight: 0, port: 6984, target: host), ttl: 120,
                cacheFlush: true),
            DNSRecord(name: instance, data: .txt([Array("v=1".utf8), Array("path=/photodrop".utf8)]), ttl: 4500),
            DNSRecord(name: host, data: .a([192, 168, 1, 20]), ttl: 120, cacheFlush: true),
            DNSRecord(name: host, data: .aaaa(Array(repeating: 0xFE, count: 16)), ttl: 120),
            DNSRecord(name: host, data: .opaque(type: 47, bytes: [1, 2, 3]), ttl: 120),
        ]
        return message
    }

    @Test func roundTripsEveryRecordTypeWithCompression() throws {
        let message = Self.sample()
        let bytes = message.serialized()
        let parsed = try DNSMessage.parse(bytes)
        #expect(parsed == message)
        #expect(parsed.answers.first?.data == message.answers.first?.data)
        #expect(parsed.additionals[0].cacheFlush && !parsed.additionals[1].cacheFlush)
        #expect(parsed.questions.first?.unicastResponse == true)
        // "_photodrop._tcp.local" is written once: the instance name and later names point back into it.
        for text in ["_photodrop", "anna-couchlite", "local"] {
            let needle = Array(text.utf8)
            let occurrences = (0...(bytes.count - needle.count)).filter {
                Array(bytes[$0..<($0 + needle.count)]) == needle
            }
            #expect(occurrences.count == 1, "\(text)")
        }
    }

    @Test func namesCompareWithoutCaseAndKeepTheirLimits() {
        #expect(Self.name("Foo._TCP.local") == Self.name("foo._tcp.LOCAL"))
        #expect(Self.name("a.b.local").hasSuffix(Self.name("LOCAL")))
        #expect(DNSName(labels: [Array(repeating: 0x61, count: 64)]) == nil)
        #expect(DNSName(labels: [Array(repeating: 0x61, count: 63)]) != nil)
        #expect(DNSName(labels: [[]]) == nil)
        // 4 labels of 63 = 256 wire bytes with the root: one over.
        #expect(DNSName(labels: Array(repeating: Array(repeating: 0x61, count: 63), count: 4)) == nil)
        #expect(DNSName(labels: Array(repeating: Array(repeating: 0x61, count: 63), count: 3)) != nil)
    }

    @Test func refusesCompressionLoops() {
        // A question whose name is a pointer to itself, and one pointing at a pointer pointing back.
        #expect(throws: DNSParseError.badPointer) {
            try DNSMessage.parse(Self.packet(questions: 1, [0xC0, 12, 0, 12, 0, 1]))
        }
        #expect(throws: DNSParseError.badPointer) {
            try DNSMessage.parse(Self.packet(questions: 1, [0xC0, 14, 0xC0, 12, 0, 12, 0, 1]))
        }
    }

    @Test func refusesForwardAndOutOfRangePointers() {
        // Forward to a valid name later in the packet: still refused (pointers go strictly backwards).
        #expect(throws: DNSParseError.badPointer) {
            try DNSMessage.parse(Self.packet(questions: 1, [0xC0, 18, 0, 12, 0, 1, 1, 0x61, 0]))
        }
        #expect(throws: DNSParseError.badPointer) {
            try DNSMessage.parse(Self.packet(questions: 1, [0xFF, 0xFF, 0, 12, 0, 1]))
        }
        // A pointer cut in half by the end of the packet.
        #expect(throws: DNSParseError.self) { try DNSMessage.parse(Self.packet(questions: 1, [0xC0])) }
        #expect(throws: DNSParseError.truncated) {
            try DNSMessage.parse(Self.packet(answers: 1, [1, 0x61, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 1, 2]))
        }
    }

    @Test func refusesLongChainsOfBackwardPointers() {
        // In the data of a first record (which starts at 23): a name, then pointers each one hop back to the one
        // before, 100 deep. The second record's name points at the last: more hops than allowed.
        let base = 23
        var chain: [UInt8] = [1, 0x61, 0]
        for index in 0..<100 {
            let target = index == 0 ? base : base + 3 + 2 * (index - 1)
            chain += [0xC0 | UInt8(target >> 8), UInt8(target & 0xFF)]
        }
        let last = base + 3 + 2 * 99
        let first: [UInt8] = [0, 0, 99, 0, 1, 0, 0, 0, 0, UInt8(chain.count >> 8), UInt8(chain.count & 0xFF)] + chain
        let second: [UInt8] = [0xC0 | UInt8(last >> 8), UInt8(last & 0xFF), 0, 99, 0, 1, 0, 0, 0, 0, 0, 0]
        #expect(throws: DNSParseError.badPointer) { try DNSMessage.parse(Self.packet(answers: 2, first + second)) }
        // The same chain 10 deep is followed.
        let short = base + 3 + 2 * 9
        let near: [UInt8] = [0xC0 | UInt8(short >> 8), UInt8(short & 0xFF), 0, 99, 0, 1, 0, 0, 0, 0, 0, 0]
        let parsed = try? DNSMessage.parse(Self.packet(answers: 2, first + near))
        #expect(parsed?.answers.last?.name == Self.name("a"))
    }

    @Test func refusesHugeLabelsAndNames() {
        // 0x40 and 0x80 label types, and 64-byte labels, do not exist in mDNS.
        #expect(throws: DNSParseError.badName) {
            try DNSMessage.parse(
                Self.packet(questions: 1, [0x40] + Array(repeating: 0x61, count: 64) + [0, 0, 1, 0, 1]))
        }
        #expect(throws: DNSParseError.badName) {
            try DNSMessage.parse(Self.packet(questions: 1, [0x80, 0, 0, 1, 0, 1]))
        }
        // Five labels of 63: 321 bytes, over 255.
        let label: [UInt8] = [63] + Array(repeating: 0x61, count: 63)
        let long = Array(Array(repeating: label, count: 5).joined()) + [0, 0, 1, 0, 1]
        #expect(throws: DNSParseError.badName) { try DNSMessage.parse(Self.packet(questions: 1, long)) }
        // Long through pointers: each name adds a label before a pointer to the previous one.
        var body: [UInt8] = []
        var previous: Int?
        var questions: UInt16 = 0
        for _ in 0..<8 {
            let start = 12 + body.count
            body += label
            body += previous.map { [0xC0 | UInt8($0 >> 8), UInt8($0 & 0xFF)] } ?? [0]
            body += [0, 1, 0, 1]
            previous = start
            questions += 1
        }
        #expect(throws: DNSParseError.badName) { try DNSMessage.parse(Self.packet(questions: questions, body)) }
    }

    @Test func refusesTruncatedPacketsAtEveryLength() {
        let bytes = Self.sample().serialized()
        for length in 0..<bytes.count {
            #expect(throws: DNSParseError.self) { try DNSMessage.parse(Array(bytes.prefix(length))) }
        }
    }

    @Test func refusesCountsLargerThanThePacket() {
        #expect(throws: DNSParseError.countTooLarge) {
            try DNSMessage.parse(Self.packet(questions: 0xFFFF, answers: 0xFFFF, [0, 0, 1, 0, 1]))
        }
        #expect(throws: DNSParseError.countTooLarge) {
            try DNSMessage.parse(Self.packet(answers: 2, [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]))
        }
        // Fewer records than counted but each of them small: more than maxRecords in a packet that holds them.
        let record: [UInt8] = [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]
        let many = Array(Array(repeating: record, count: 300).joined())
        #expect(throws: DNSParseError.countTooLarge) { try DNSMessage.parse(Self.packet(answers: 300, many)) }
        #expect(throws: DNSParseError.tooLarge) {
            try DNSMessage.parse(Array(repeating: 0, count: DNSMessage.maxPacketBytes + 1))
        }
    }

    @Test func refusesRecordDataThatDoesNotMatchItsType() {
        // An A record of 5 bytes; a TXT string running past its record; a PTR name shorter than its length.
        let a: [UInt8] = [0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4, 5]
        #expect(throws: DNSParseError.badRecordData) { try DNSMessage.parse(Self.packet(answers: 1, a)) }
        let txt: [UInt8] = [0, 0, 16, 0, 1, 0, 0, 0, 0, 0, 2, 5, 0x61]
        #expect(throws: DNSParseError.badRecordData) { try DNSMessage.parse(Self.packet(answers: 1, txt)) }
        let ptr: [UInt8] = [0, 0, 12, 0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0]
        #expect(throws: DNSParseError.badRecordData) { try DNSMessage.parse(Self.packet(answers: 1, ptr)) }
        let srv: [UInt8] = [0, 0, 33, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0]
        #expect(throws: DNSParseError.badRecordData) { try DNSMessage.parse(Self.packet(answers: 1, srv)) }
    }

    @Test func emptyTXTIsOneEmptyStringOnTheWire() throws {
        var message = DNSMessage()
        message.answers = [DNSRecord(name: Self.name("x.local"), data: .txt([]), ttl: 1)]
        let bytes = message.serialized()
        #expect(Array(bytes.suffix(3)) == [0, 1, 0])
        #expect(try DNSMessage.parse(bytes) == message)
    }
}
