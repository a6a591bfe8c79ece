import Testing

@testable import Discovery

@Suite struct ResponderCoreTests {
    static let lan = MDNSInterface(name: "eth0", index: 2, address: [10, 0, 0, 1], netmask: [255, 255, 255, 252])
    static let peer: [UInt8] = [10, 0, 0, 2]
    static let drop = ServiceDescription(
        type: ServiceDescription.photoDropType, port: 6984,
        txt: ServiceDescription.txt(name: "Anna's laptop", path: "/photodrop", tlsPort: 6984, fingerprint: "ab12"))

    static func core(now: Double = 0) -> ResponderCore {
        ResponderCore(
            name: "Anna's laptop", hostName: "anna.example", services: [drop], interfaces: [lan], now: now,
            startDelay: 0)
    }

    /// Runs the timers from `from` to `until` every 10 ms; returns what was sent with its time.
    static func run(_ core: inout ResponderCore, from: Double, until: Double) -> [(Double, MDNSOutgoing)] {
        var sent: [(Double, MDNSOutgoing)] = []
        var now = from
        while now <= until {
            sent += core.tick(now: now).map { (now, $0) }
            now += 0.01
        }
        return sent
    }

    static func query(_ name: String, _ type: DNSRecordType, unicast: Bool = false) -> DNSMessage {
        var message = DNSMessage()
        message.questions = [DNSQuestion(name: DNSName(name) ?? .root, type: type, unicastResponse: unicast)]
        return message
    }

    static func announced() -> ResponderCore {
        var core = core()
        _ = run(&core, from: 0, until: 3)
        return core
    }

    @Test func probesThreeTimesThenAnnouncesTwiceASecondApart() {
        var core = Self.core()
        let sent = Self.run(&core, from: 0, until: 4)
        let probes = sent.filter { !$0.1.message.isResponse }
        let announcements = sent.filter { $0.1.message.isResponse }
        #expect(probes.count == 3)
        #expect(announcements.count == 2)
        #expect(core.phase == .running)
        // 250 ms between probes; the first asks for unicast answers; each names our records in its authority.
        #expect(zip(probes, probes.dropFirst()).allSatisfy { abs($1.0 - $0.0 - 0.25) < 0.02 })
        #expect(probes.first?.1.message.questions.allSatisfy(\.unicastResponse) == true)
        #expect(probes.last?.1.message.questions.contains { $0.unicastResponse } == false)
        #expect(probes.allSatisfy { $0.1.message.authorities.contains { $0.data.type == .srv } })
        if announcements.count == 2 { #expect(announcements[1].0 - announcements[0].0 >= 0.99) }
        let records = announcements.first?.1.message.answers ?? []
        #expect(records.contains { $0.data == .a([10, 0, 0, 1]) })
        #expect(records.contains { if case .srv(_, _, 6984, _) = $0.data { true } else { false } })
        let txt = records.first { $0.data.type == .txt }
        guard case .txt(let strings)? = txt?.data else {
            Issue.record("no TXT record announced")
            return
        }
        let pairs = strings.map { String(decoding: $0, as: UTF8.self) }
        #expect(pairs == ["v=1", "name=Anna's laptop", "path=/photodrop", "tls=6984", "sha256=ab12"])
        #expect(!pairs.contains { $0.lowercased().contains("password") || $0.contains("drop-") })
    }

    @Test func aConflictDuringProbingRenamesTheInstance() {
        var core = Self.core()
        _ = Self.run(&core, from: 0, until: 0.1)
        // Someone else answers with an SRV for our instance name on another port.
        var response = DNSMessage()
        response.isResponse = true
        response.answers = [
            DNSRecord(
                name: core.instance(of: Self.drop),
                data: .srv(priority: 0, weight: 0, port: 1, target: DNSName("other.local") ?? .root), ttl: 120)
        ]
        #expect(core.handle(response, from: Self.peer, port: 5353, now: 0.2).isEmpty)
        #expect(core.instanceName == "Anna's laptop (2)")
        #expect(core.phase == .probing(sent: 0))
        let sent = Self.run(&core, from: 0.2, until: 4)
        #expect(sent.filter { !$0.1.message.isResponse }.count == 3)
        #expect(core.phase == .running)
        #expect(core.instance(of: Self.drop).firstLabel == "Anna's laptop (2)")
        // A second conflict, after announcing: (3), and probing again.
        response.answers[0].name = core.instance(of: Self.drop)
        _ = core.handle(response, from: Self.peer, port: 5353, now: 5)
        #expect(core.instanceName == "Anna's laptop (3)")
        #expect(core.phase == .probing(sent: 0))
    }

    @Test func ownLoopedBackPacketsAreNoConflict() {
        var core = Self.core()
        let sent = Self.run(&core, from: 0, until: 4)
        for (time, packet) in sent {
            _ = core.handle(packet.message, from: Self.lan.address, port: 5353, now: time)
        }
        #expect(core.instanceName == "Anna's laptop")
        #expect(core.phase == .running)
    }

    @Test func aHostNameConflictRenamesTheHost() {
        var core = Self.announced()
        var response = DNSMessage()
        response.isResponse = true
        response.answers = [DNSRecord(name: core.host, data: .a([10, 0, 0, 2]), ttl: 120)]
        _ = core.handle(response, from: Self.peer, port: 5353, now: 5)
        #expect(core.host.description == "anna-couchlite-2.local")
    }

    @Test func givesUpAfterTooManyConflicts() {
        var core = Self.core()
        for attempt in 0..<(ResponderCore.maxAttempts + 1) {
            var response = DNSMessage()
            response.isResponse = true
            response.answers = [DNSRecord(name: core.instance(of: Self.drop), data: .txt([[0x61]]), ttl: 120)]
            _ = core.handle(response, from: Self.peer, port: 5353, now: Double(attempt))
        }
        #expect(core.phase == .failed)
        #expect(core.tick(now: 100).isEmpty)
        #expect(core.handle(Self.query("_photodrop._tcp.local", .ptr), from: Self.peer, port: 5353, now: 100).isEmpty)
    }

    @Test func answersPTRWithSRVTXTAndAddressAsAdditionals() {
        var core = Self.announced()
        let replies = core.handle(Self.query("_photodrop._tcp.local", .ptr), from: Self.peer, port: 5353, now: 10)
        #expect(replies.count == 1)
        guard let reply = replies.first else { return }
        #expect(reply.destination == .multicast(interface: Self.lan))
        #expect(reply.message.answers.map(\.data) == [.ptr(core.instance(of: Self.drop))])
        let types = Set(reply.message.additionals.map(\.data.type))
        #expect(types == [.srv, .txt, .a])
        // SRV, TXT and A questions are answered too; a name we do not own is not.
        let instance = core.instance(of: Self.drop).description
        for type in [DNSRecordType.srv, .txt] {
            #expect(core.handle(Self.query(instance, type), from: Self.peer, port: 5353, now: 12).count == 1)
        }
        #expect(core.handle(Self.query(core.host.description, .a), from: Self.peer, port: 5353, now: 12).count == 1)
        #expect(core.handle(Self.query("_other._tcp.local", .ptr), from: Self.peer, port: 5353, now: 12).isEmpty)
        #expect(core.handle(Self.query("_couchdb._tcp.local", .ptr), from: Self.peer, port: 5353, now: 12).isEmpty)
    }

    @Test func sharedRecordAnswersWaitTheirRandomDelayAndQueriesMeanwhileJoinThem() {
        var core = Self.announced()
        #expect(core.tick(now: 9).isEmpty)  // announcing done: no timer left
        #expect(core.nextWake == .infinity)
        // A PTR (shared) answer waits: nothing at once, nothing before its delay, one packet when it is due.
        let ptr = Self.query("_photodrop._tcp.local", .ptr)
        #expect(core.handle(ptr, from: Self.peer, port: 5353, now: 10, sharedDelay: 0.05).isEmpty)
        #expect(abs(core.nextWake - 10.05) < 1e-9)
        // A flood of the same query while it waits adds nothing and sends nothing.
        for step in 1...100 {
            #expect(
                core.handle(ptr, from: Self.peer, port: 5353, now: 10 + Double(step) * 0.0001, sharedDelay: 0.1)
                    .isEmpty)
        }
        #expect(core.tick(now: 10.04).isEmpty)
        let sent = core.tick(now: 10.05)
        #expect(sent.count == 1)
        #expect(sent.first?.message.answers.map(\.data) == [.ptr(core.instance(of: Self.drop))])
        #expect(Set(sent.first?.message.additionals.map(\.data.type) ?? []) == [.srv, .txt, .a])
        #expect(core.tick(now: 10.2).isEmpty)
        #expect(core.nextWake == .infinity)
        // A delay out of range is held to 20-120 ms.
        #expect(core.handle(ptr, from: Self.peer, port: 5353, now: 20, sharedDelay: 5).isEmpty)
        #expect(abs(core.nextWake - (20 + ResponderCore.sharedAnswerDelay.upperBound)) < 1e-9)
        // Unique records (SRV, TXT, A: cache-flush) are answered at once whatever the delay.
        let instance = core.instance(of: Self.drop).description
        #expect(
            core.handle(Self.query(instance, .srv), from: Self.peer, port: 5353, now: 30, sharedDelay: 0.1).count == 1)
    }

    @Test func queriesFromOutsideTheSubnetAreNotAnswered() {
        var core = Self.announced()
        for source: [UInt8] in [[10, 0, 0, 5], [192, 168, 1, 2], [8, 8, 8, 8]] {
            #expect(core.handle(Self.query("_photodrop._tcp.local", .ptr), from: source, port: 5353, now: 10).isEmpty)
        }
        // Nor can they cause a conflict.
        var response = DNSMessage()
        response.isResponse = true
        response.answers = [DNSRecord(name: core.instance(of: Self.drop), data: .txt([[0x61]]), ttl: 120)]
        _ = core.handle(response, from: [192, 168, 1, 2], port: 5353, now: 10)
        #expect(core.instanceName == "Anna's laptop")
    }

    @Test func multicastAnswersAreLimitedToOneARecordASecond() {
        var core = Self.announced()
        let query = Self.query("_photodrop._tcp.local", .ptr)
        #expect(core.handle(query, from: Self.peer, port: 5353, now: 10).count == 1)
        #expect(core.handle(query, from: Self.peer, port: 5353, now: 10.5).isEmpty)
        #expect(core.handle(query, from: Self.peer, port: 5353, now: 11.1).count == 1)
    }

    @Test func aFloodOfQueriesIsAnsweredAtTheSendRateAtMost() {
        var core = Self.announced()
        // Legacy (unicast) queries are not limited per record; the packet budget still holds.
        var sent = 0
        var now = 20.0
        for _ in 0..<10_000 {
            sent += core.handle(Self.query("_photodrop._tcp.local", .ptr), from: Self.peer, port: 40000, now: now).count
            now += 0.0001
        }
        // One second of flood: the burst plus one second's refill.
        #expect(sent <= Int(ResponderCore.sendBurst + ResponderCore.sendRate) + 1)
        #expect(sent >= 10)
    }

    @Test func legacyQueriesGetTheirIdQuestionsAndShortTTLs() {
        var core = Self.announced()
        var query = Self.query("_photodrop._tcp.local", .ptr)
        query.id = 0x1234
        let replies = core.handle(query, from: Self.peer, port: 40000, now: 10)
        guard let reply = replies.first else {
            Issue.record("no reply")
            return
        }
        #expect(reply.destination == .unicast(address: Self.peer, port: 40000, interface: Self.lan))
        #expect(reply.message.id == 0x1234)
        #expect(reply.message.questions == query.questions)
        #expect(reply.message.allRecords.allSatisfy { $0.ttl <= 10 && !$0.cacheFlush })
    }

    @Test func knownAnswersAreNotRepeated() {
        var core = Self.announced()
        var query = Self.query("_photodrop._tcp.local", .ptr)
        query.answers = [
            DNSRecord(
                name: DNSName("_photodrop._tcp.local") ?? .root, data: .ptr(core.instance(of: Self.drop)), ttl: 4000)
        ]
        #expect(core.handle(query, from: Self.peer, port: 5353, now: 10).isEmpty)
        // Half the TTL or less left: answered again.
        query.answers[0].ttl = 100
        #expect(core.handle(query, from: Self.peer, port: 5353, now: 10).count == 1)
    }

    @Test func goodbyesCarryTTLZeroForEveryRecord() {
        var core = Self.announced()
        let goodbyes = core.goodbyes(now: 10)
        #expect(goodbyes.count == 1)
        let records = goodbyes.flatMap(\.message.answers)
        #expect(records.count == core.records(on: Self.lan).count)
        #expect(records.allSatisfy { $0.ttl == 0 })
        #expect(records.contains { $0.data == .ptr(core.instance(of: Self.drop)) })
        // Nothing to say goodbye to before the names were ours.
        var probing = Self.core()
        _ = probing.tick(now: 0)
        #expect(probing.goodbyes(now: 0.1).isEmpty)
    }

    @Test func aNewAddressIsAnnouncedAndTheOldSaidGoodbyeTo() {
        var core = Self.announced()
        let moved = MDNSInterface(name: "eth0", index: 2, address: [10, 0, 0, 5], netmask: [255, 255, 255, 0])
        let gone = core.update(interfaces: [moved], now: 10)
        #expect(gone.flatMap(\.message.answers).map(\.data) == [.a([10, 0, 0, 1])])
        #expect(gone.flatMap(\.message.answers).allSatisfy { $0.ttl == 0 })
        let sent = Self.run(&core, from: 10, until: 12)
        #expect(sent.count == 2)
        #expect(sent.first?.1.message.answers.contains { $0.data == .a([10, 0, 0, 5]) } == true)
    }

    @Test func aSimultaneousProbeThatSortsLaterMakesUsWait() {
        var core = Self.core()
        _ = core.tick(now: 0)
        var probe = DNSMessage()
        probe.questions = [DNSQuestion(name: core.instance(of: Self.drop), type: .any)]
        probe.authorities = [
            DNSRecord(
                name: core.instance(of: Self.drop),
                data: .srv(priority: 0, weight: 0, port: 65000, target: core.host), ttl: 120)
        ]
        _ = core.handle(probe, from: Self.peer, port: 5353, now: 0.1)
        #expect(core.phase == .probing(sent: 0))
        #expect(core.nextAction >= 1.09)
        // One that sorts earlier (a TXT record shorter than ours, before our SRV) loses to us: we go on.
        var ours = Self.core()
        _ = ours.tick(now: 0)
        probe.authorities[0].data = .txt([[0x61]])
        _ = ours.handle(probe, from: Self.peer, port: 5353, now: 0.1)
        #expect(ours.phase == .probing(sent: 1))
    }

    @Test func namesAreCutToTheirLimits() {
        let long = String(repeating: "é", count: 100)
        let renamed = renamedInstance(long, attempt: 12)
        #expect(renamed.utf8.count <= 63)
        #expect(renamed.hasSuffix(" (12)"))
        #expect(hostLabel("Anna's MacBook.local", attempt: 1) == "anna-s-macbook-couchlite")
        #expect(hostLabel("", attempt: 3) == "host-couchlite-3")
    }
}
