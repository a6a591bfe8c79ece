/// The frame opcodes of RFC 6455 §5.2; every other value is reserved and refused (close 1002).
public enum WebSocketOpcode: UInt8, Sendable, Equatable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes of payload and never fragmented (RFC 6455 §5.5).
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// A status code in a CLOSE frame (RFC 6455 §7.4), kept as its number so codes we do not name survive.
public struct WebSocketCloseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normal = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the server is going away (shutdown), or a peer stopped answering.
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: a frame broke the protocol.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a kind of data the endpoint cannot accept (BLIP refuses text messages).
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1005: not sent; stands for a CLOSE frame that carried no code.
    public static let noStatus = WebSocketCloseCode(rawValue: 1005)
    /// 1006: not sent; stands for a connection that ended without a CLOSE frame.
    public static let abnormal = WebSocketCloseCode(rawValue: 1006)
    /// 1007: a text message (or close reason) that is not UTF-8.
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a policy violation (authentication problems, in LiteCore's reading).
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a frame or message over the limits.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1011: the server met an unexpected condition.
    public static let internalError = WebSocketCloseCode(rawValue: 1011)

    /// Whether a peer may send this code in a CLOSE frame: 1000-1003, 1007-1014 and 3000-4999 (RFC 6455 §7.4.2 and
    /// the IANA registry); 1004-1006 and 1015 are reserved for local use, the rest unassigned.
    public var isValidOnTheWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String { String(rawValue) }
}
