import Discovery

/// Target: the DNS message parser and builder (mDNS packets as the responder and `couchlite peers` read them off
/// the LAN).
///
/// Properties: parsing never traps and refuses rather than reads past the end; a parsed message obeys the limits
/// (at most `maxRecords` entries, names of at most 255 wire bytes and labels of at most 63); its serialization
/// parses back to an equal message whenever it fits a packet, and serializing that again gives the same bytes.
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
}
