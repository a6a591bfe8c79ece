import Testing

@testable import Discovery

@Suite struct PeerCollectorTests {
    static let lan = MDNSInterface(name: "eth0", index: 2, address: [10, 0, 0, 1], netmask: [255, 255, 255, 252])

    /// What an announced responder multicasts, as a browser hears it.
    static func announcement(tls: Bool) -> DNSMessage {
        let service = ServiceDescription(
            type: ServiceDescription.photoDropType, port: 6984,
            txt: ServiceDescription.txt(
                name: "Anna", path: "/photodrop", tlsPort: tls ? 6984 : nil, fingerprint: tls ? "ab" : nil))
        var core = ResponderCore(
            name: "Anna", hostName: "anna", services: [service], interfaces: [lan], now: 0, startDelay: 0)
        var now = 0.0
        while now < 2 {
            if let sent = core.tick(now: now).first(where: { $0.message.isResponse }) { return sent.message }
            now += 0.01
        }
        Issue.record("nothing announced")
        return DNSMessage()
    }

    @Test func resolvesAnAnnouncedDropToItsURL() {
        var collector = PeerCollector(types: [ServiceDescription.photoDropType])
        collector.add(Self.announcement(tls: true), now: 5)
        let peers = Array(collector.peers.values)
        #expect(peers.count == 1)
        #expect(peers.first?.name == "Anna")
        #expect(peers.first?.url == "https://10.0.0.1:6984/photodrop")
        #expect(peers.first?.txt["sha256"] == "ab")
        #expect(collector.missingQuestions().isEmpty)
        var plain = PeerCollector(types: [ServiceDescription.photoDropType])
        plain.add(Self.announcement(tls: false), now: 5)
        #expect(plain.peers.values.first?.url == "http://10.0.0.1:6984/photodrop")
    }

    @Test func aGoodbyeMarksThePeerRemoved() {
        var collector = PeerCollector(types: [ServiceDescription.photoDropType])
        var message = Self.announcement(tls: false)
        collector.add(message, now: 1)
        message.answers = message.answers.map { DNSRecord(name: $0.name, data: $0.data, ttl: 0) }
        collector.add(message, now: 2)
        #expect(collector.peers.values.first?.removed == true)
    }

    @Test func anUnresolvedPeerAsksForWhatIsMissingAndQueriesAreIgnored() {
        var collector = PeerCollector(types: [ServiceDescription.photoDropType])
        var message = Self.announcement(tls: false)
        message.answers = message.answers.filter { $0.data.type == .ptr }
        collector.add(message, now: 1)
        #expect(collector.peers.values.first?.url == nil)
        #expect(Set(collector.missingQuestions().map(\.type)) == [.srv, .txt])
        var query = Self.announcement(tls: false)
        query.isResponse = false
        var other = PeerCollector(types: [ServiceDescription.photoDropType])
        other.add(query, now: 1)
        #expect(other.peers.isEmpty)
    }

    @Test func aFloodOfInstancesIsCappedAtMaxPeers() {
        var collector = PeerCollector(types: [ServiceDescription.photoDropType])
        let type = DNSName("_photodrop._tcp.local") ?? .root
        for batch in 0..<3 {
            var message = DNSMessage()
            message.isResponse = true
            message.answers = (0..<200).compactMap { index in
                type.prepending(label: Array("peer \(batch)-\(index)".utf8)).map {
                    DNSRecord(name: type, data: .ptr($0), ttl: 120)
                }
            }
            collector.add(message, now: Double(batch))
        }
        #expect(collector.peers.count == PeerCollector.maxPeers)
        #expect(collector.missingQuestions().count <= 32)
    }
}

@Suite struct PeerCollectorImpostorTests {
    @Test func anImpostorAnnouncingTheSameNameWithAnotherCertificateMarksThePeerConflicting() {
        var collector = PeerCollector(types: [ServiceDescription.photoDropType])
        let real = PeerCollectorTests.announcement(tls: true)
        collector.add(real, now: 1)
        #expect(collector.peers.values.first?.conflicting == false)
        // The same records again (a repeated announcement) are no conflict.
        collector.add(real, now: 2)
        #expect(collector.peers.values.first?.conflicting == false)
        var impostor = real
        impostor.answers = real.answers.map { record in
            guard case .txt(let strings) = record.data else { return record }
            let other = strings.map { $0 == Array("sha256=ab".utf8) ? Array("sha256=cd".utf8) : $0 }
            return DNSRecord(name: record.name, data: .txt(other), ttl: record.ttl, cacheFlush: record.cacheFlush)
        }
        collector.add(impostor, now: 3)
        #expect(collector.peers.count == 1)
        #expect(collector.peers.values.first?.conflicting == true)
    }

    @Test func anImpostorAnnouncingTheSameNameAtAnotherPortMarksThePeerConflicting() {
        var collector = PeerCollector(types: [ServiceDescription.photoDropType])
        let real = PeerCollectorTests.announcement(tls: true)
        collector.add(real, now: 1)
        var impostor = real
        impostor.answers = real.answers.map { record in
            guard case .srv(let priority, let weight, _, let target) = record.data else { return record }
            return DNSRecord(
                name: record.name, data: .srv(priority: priority, weight: weight, port: 7000, target: target),
                ttl: record.ttl, cacheFlush: record.cacheFlush)
        }
        collector.add(impostor, now: 2)
        #expect(collector.peers.values.first?.conflicting == true)
    }
}
