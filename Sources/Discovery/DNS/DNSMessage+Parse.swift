/// Why a packet was refused. Every refusal is found before any allocation that its bytes could size.
public enum DNSParseError: Error, Sendable, Equatable {
    /// Larger than `DNSMessage.maxPacketBytes`.
    case tooLarge
    /// Ends inside a header, name, question or record.
    case truncated
    /// A count in the header is more than the rest of the packet could hold, or more than `maxRecords`.
    case countTooLarge
    /// A label over 63 bytes, a name over 255, or a label type other than plain and pointer.
    case badName
    /// A compression pointer that does not point strictly backwards (so loops and forward chains), or too many.
    case badPointer
    /// A record whose data does not match its type (an A record of 5 bytes, a TXT string past its record).
    case badRecordData
}

extension DNSMessage {
    /// The largest packet read: mDNS allows up to 9,000 bytes (RFC 6762 §17), so anything larger is not mDNS.
    public static let maxPacketBytes = 9000
    /// The most questions plus records one message may hold. A 9,000-byte packet could name 818 records of
    /// 11 bytes; no DNS-SD answer needs more than a few dozen, and this bounds what a flood of them costs.
    public static let maxRecords = 256
    /// The most compression pointers followed in one name: each must point strictly backwards, so a chain ends
    /// anyway; this keeps a chain of one-byte hops through a whole packet cheap.
    public static let maxPointerHops = 64

    /// Parses a packet. Refuses (throws) every malformed or hostile input; never traps.
    public static func parse(_ bytes: [UInt8]) throws(DNSParseError) -> DNSMessage {
        guard bytes.count <= maxPacketBytes else { throw .tooLarge }
        var reader = DNSReader(bytes: bytes)
        var message = DNSMessage()
        message.id = try reader.u16()
        let flags = try reader.u16()
        message.isResponse = flags & 0x8000 != 0
        message.opcode = UInt8((flags >> 11) & 0x0F)
        message.authoritative = flags & 0x0400 != 0
        message.truncated = flags & 0x0200 != 0
        message.rcode = UInt8(flags & 0x000F)
        let questions = Int(try reader.u16())
        let answers = Int(try reader.u16())
        let authorities = Int(try reader.u16())
        let additionals = Int(try reader.u16())
        // A question takes at least 5 bytes (root name, type, class), a record at least 11: counts the rest of the
        // packet cannot hold are refused before anything is reserved for them.
        let records = answers + authorities + additionals
        guard questions + records <= maxRecords, questions * 5 + records * 11 <= reader.remaining else {
            throw .countTooLarge
        }
        message.questions.reserveCapacity(questions)
        for _ in 0..<questions {
            let name = try reader.readName()
            let type = try reader.u16()
            let klass = try reader.u16()
            message.questions.append(
                DNSQuestion(name: name, type: DNSRecordType(code: type), unicastResponse: klass & 0x8000 != 0))
        }
        message.answers = try reader.records(answers)
        message.authorities = try reader.records(authorities)
        message.additionals = try reader.records(additionals)
        return message
    }
}

/// A cursor over a packet that checks every read against its end.
struct DNSReader {
    let bytes: [UInt8]
    var offset = 0

    var remaining: Int { bytes.count - offset }

    mutating func u8() throws(DNSParseError) -> UInt8 {
        guard offset < bytes.count else { throw .truncated }
        defer { offset &+= 1 }
        return bytes[offset]
    }

    mutating func u16() throws(DNSParseError) -> UInt16 {
        guard remaining >= 2 else { throw .truncated }
        defer { offset &+= 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset &+ 1])
    }

    mutating func u32() throws(DNSParseError) -> UInt32 {
        UInt32(try u16()) << 16 | UInt32(try u16())
    }

    mutating func take(_ count: Int) throws(DNSParseError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .truncated }
        defer { offset &+= count }
        return Array(bytes[offset..<(offset &+ count)])
    }

    /// A name at the cursor, following compression pointers (RFC 1035 §4.1.4). A pointer must point before the
    /// byte it sits at, so every hop goes strictly backwards and no chain can loop; hops are also counted. The
    /// labels are checked against the limits as they are read, so a hostile name costs at most 255 bytes.
    mutating func readName() throws(DNSParseError) -> DNSName {
        var labels: [[UInt8]] = []
        var wire = 1
        var position = offset
        var resumeAt: Int?
        var hops = 0
        while true {
            guard position < bytes.count else { throw .truncated }
            let length = bytes[position]
            switch length & 0xC0 {
            case 0x00:
                if length == 0 {
                    offset = resumeAt ?? (position &+ 1)
                    guard let name = DNSName(labels: labels) else { throw .badName }
                    return name
                }
                let count = Int(length)
                wire &+= 1 &+ count
                guard wire <= DNSName.maxWireBytes else { throw .badName }
                let start = position &+ 1
                guard bytes.count - start >= count else { throw .truncated }
                labels.append(Array(bytes[start..<(start &+ count)]))
                position = start &+ count
            case 0xC0:
                guard bytes.count - position >= 2 else { throw .truncated }
                let target = Int(length & 0x3F) << 8 | Int(bytes[position &+ 1])
                hops &+= 1
                guard target < position, hops <= DNSMessage.maxPointerHops else { throw .badPointer }
                if resumeAt == nil { resumeAt = position &+ 2 }
                position = target
            default:
                // 0x40 and 0x80: extended label types (RFC 6891) that no mDNS name uses.
                throw .badName
            }
        }
    }

    mutating func records(_ count: Int) throws(DNSParseError) -> [DNSRecord] {
        var records: [DNSRecord] = []
        records.reserveCapacity(count)
        for _ in 0..<count { records.append(try record()) }
        return records
    }

    mutating func record() throws(DNSParseError) -> DNSRecord {
        let name = try readName()
        let type = try u16()
        let klass = try u16()
        let ttl = try u32()
        let length = Int(try u16())
        guard remaining >= length else { throw .truncated }
        let end = offset &+ length
        let data: DNSRecordData
        switch DNSRecordType(code: type) {
        case .a:
            guard length == 4 else { throw .badRecordData }
            data = .a(try take(4))
        case .aaaa:
            guard length == 16 else { throw .badRecordData }
            data = .aaaa(try take(16))
        case .ptr:
            data = .ptr(try readName())
        case .srv:
            guard length >= 7 else { throw .badRecordData }
            let priority = try u16()
            let weight = try u16()
            let port = try u16()
            data = .srv(priority: priority, weight: weight, port: port, target: try readName())
        case .txt:
            var strings: [[UInt8]] = []
            while offset < end {
                let count = Int(try u8())
                guard end - offset >= count else { throw .badRecordData }
                strings.append(try take(count))
            }
            // One empty string is how an empty TXT record is written (RFC 6763 §6.1): read back as none.
            data = .txt(strings == [[]] ? [] : strings)
        default:
            data = .opaque(type: type, bytes: try take(length))
        }
        // A name inside the data (PTR, SRV) must end exactly where the record says it does.
        guard offset == end else { throw .badRecordData }
        return DNSRecord(name: name, data: data, ttl: ttl, cacheFlush: klass & 0x8000 != 0)
    }
}
