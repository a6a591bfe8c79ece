import Discovery

/// Target: the DNS message parser and builder (mDNS packets as the responder and `couchlite peers` read them off
/// the LAN), then the responder's and the browser's handling of what parsed.
///
/// Properties: parsing never traps and refuses rather than reads past the end; a parsed message obeys the limits
/// (at most `maxRecords` entries, names of at most 255 wire bytes and labels of at most 63); its serialization
/// parses back to an equal message whenever it fits a packet, and serializing that again gives the same bytes;
/// a responder (announced, its subnet holding the source) and a peer collector take the message without trapping,
/// and the collector keeps at most `maxPeers` instances.
func fuzzOne(_ bytes: [UInt8]) {
    guard let message = try? DNSMessage.parse(bytes) else { return }
    let entries = message.questions.count + message.allRecords.count
    require(entries <= DNSMessage.maxRecords, "\(entries) entries accepted")
    let names = message.questions.map(\.name) + message.allRecords.map(\.name)
    for name in names {
        require(name.wireCount <= DNSName.maxWireBytes, "a name of \(name.wireCount) bytes")
        require(name.labels.allSatisfy { !$0.isEmpty && $0.count <= DNSName.maxLabelBytes }, "a label too long")
    }
    let serialized = message.serialized()
    if serialized.count <= DNSMessage.maxPacketBytes {
        guard let again = try? DNSMessage.parse(serialized) else {
            require(false, "the serialization of a parsed message does not parse")
            return
        }
        require(again == message, "parse(serialize(m)) != m")
        require(again.serialized() == serialized, "serialization is not a fixed point")
    }

    let interface = MDNSInterface(name: "fuzz0", index: 1, address: [10, 0, 0, 1], netmask: [255, 0, 0, 0])
    let service = ServiceDescription(
        type: ServiceDescription.photoDropType, port: 6984,
        txt: ServiceDescription.txt(name: "fuzz", path: "/photodrop", tlsPort: nil, fingerprint: nil))
    var core = ResponderCore(
        name: "fuzz", hostName: "fuzz", services: [service], interfaces: [interface], now: 0, startDelay: 0)
    var now = 0.0
    while now < 4 {
        _ = core.tick(now: now)
        now += 0.05
    }
    let port: UInt16 = bytes.first.map { $0 & 1 == 0 ? 5353 : 40000 } ?? 5353
    for reply in core.handle(message, from: [10, 0, 0, 2], port: port, now: now) {
        require(reply.message.serialized().count <= DNSMessage.maxPacketBytes, "a reply larger than a packet")
    }
    var collector = PeerCollector(types: [ServiceDescription.photoDropType, ServiceDescription.couchDBType])
    collector.add(message, now: 0)
    collector.add(message, now: 1)
    require(collector.peers.count <= PeerCollector.maxPeers, "\(collector.peers.count) peers kept")
    _ = collector.missingQuestions()
    for peer in collector.peers.values { _ = peer.url }
}
