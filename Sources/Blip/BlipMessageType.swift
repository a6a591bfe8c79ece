/// The three low bits of a frame's flags (LiteCore `BLIPProtocol.hh`).
public enum BlipMessageType: UInt8, Sendable, Equatable {
    /// A request (MSG).
    case request = 0
    /// A reply to a request (RPY).
    case response = 1
    /// An error reply (ERR), with `Error-Domain` and `Error-Code` properties.
    case error = 2
    /// Acknowledges bytes received of a request (ACKMSG); never reaches the application.
    case ackRequest = 4
    /// Acknowledges bytes received of a reply (ACKRPY); never reaches the application.
    case ackResponse = 5

    /// RPY and ERR.
    public var isReply: Bool { self == .response || self == .error }
    public var isAck: Bool { self == .ackRequest || self == .ackResponse }
}

/// A frame's flags byte: the message type and four flag bits; unknown bits are ignored.
public struct BlipFlags: Sendable, Equatable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Payload passed through the direction's deflate stream.
    public static let compressed: UInt8 = 0x08
    /// Delivered ahead of normal messages.
    public static let urgent: UInt8 = 0x10
    /// A request that wants no reply.
    public static let noReply: UInt8 = 0x20
    /// More frames of this message follow.
    public static let moreComing: UInt8 = 0x40

    /// The type, or nil for the reserved values 3, 6 and 7 (LiteCore ignores such frames).
    public var type: BlipMessageType? { BlipMessageType(rawValue: rawValue & 0x07) }
    public func has(_ bit: UInt8) -> Bool { rawValue & bit != 0 }
}
