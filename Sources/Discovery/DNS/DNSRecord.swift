/// The record types DNS-SD over mDNS uses (RFC 6763): PTR names the instances of a service type, SRV gives an
/// instance's host and port, TXT its key/value pairs, A and AAAA the host's addresses. Any other type is kept as
/// opaque bytes (NSEC, which responders send for negative answers, among them).
public enum DNSRecordType: Sendable, Hashable {
    case a, ptr, txt, aaaa, srv, any
    case other(UInt16)

    public init(code: UInt16) {
        switch code {
        case 1: self = .a
        case 12: self = .ptr
        case 16: self = .txt
        case 28: self = .aaaa
        case 33: self = .srv
        case 255: self = .any
        default: self = .other(code)
        }
    }

    public var code: UInt16 {
        switch self {
        case .a: 1
        case .ptr: 12
        case .txt: 16
        case .aaaa: 28
        case .srv: 33
        case .any: 255
        case .other(let code): code
        }
    }
}

/// A record's data, decoded for the types DNS-SD needs.
public enum DNSRecordData: Sendable, Hashable {
    case a([UInt8])
    case aaaa([UInt8])
    case ptr(DNSName)
    case srv(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName)
    /// The character-strings, each at most 255 bytes (RFC 6763 §6: `key=value` pairs).
    case txt([[UInt8]])
    case opaque(type: UInt16, bytes: [UInt8])

    public var type: DNSRecordType {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .ptr: .ptr
        case .srv: .srv
        case .txt: .txt
        case .opaque(let type, _): DNSRecordType(code: type)
        }
    }
}

/// A question: a name, a type and a class, whose top bit in mDNS asks for a unicast answer (RFC 6762 §5.4).
public struct DNSQuestion: Sendable, Hashable {
    public var name: DNSName
    public var type: DNSRecordType
    public var unicastResponse: Bool

    public init(name: DNSName, type: DNSRecordType, unicastResponse: Bool = false) {
        self.name = name
        self.type = type
        self.unicastResponse = unicastResponse
    }

    /// Whether `record` answers this question (same name ignoring case; same type, or ANY).
    public func isAnswered(by record: DNSRecord) -> Bool {
        record.name == name && (type == .any || type == record.data.type)
    }
}

/// A resource record of class IN; in mDNS the class's top bit says the record replaces what a cache holds for its
/// name and type (cache flush, RFC 6762 §10.2).
public struct DNSRecord: Sendable, Hashable {
    public var name: DNSName
    public var data: DNSRecordData
    /// Seconds; 0 is a goodbye (RFC 6762 §10.1).
    public var ttl: UInt32
    public var cacheFlush: Bool

    public init(name: DNSName, data: DNSRecordData, ttl: UInt32, cacheFlush: Bool = false) {
        self.name = name
        self.data = data
        self.ttl = ttl
        self.cacheFlush = cacheFlush
    }
}

/// A DNS message: the header fields mDNS uses and the four sections.
public struct DNSMessage: Sendable, Hashable {
    public var id: UInt16 = 0
    /// QR bit: a response (mDNS responses also set AA).
    public var isResponse = false
    public var authoritative = false
    /// TC bit: more known answers follow in another packet (RFC 6762 §7.2).
    public var truncated = false
    public var opcode: UInt8 = 0
    public var rcode: UInt8 = 0
    public var questions: [DNSQuestion] = []
    public var answers: [DNSRecord] = []
    public var authorities: [DNSRecord] = []
    public var additionals: [DNSRecord] = []

    public init() {}

    /// Every record of the three record sections.
    public var allRecords: [DNSRecord] { answers + authorities + additionals }
}
