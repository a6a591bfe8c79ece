/// Why a BLIP connection must end, or why the application's message was refused.
public enum BlipError: Error, Sendable, Equatable {
    /// The peer broke the protocol: a bad frame header, a request out of sequence, a reply to nothing, properties
    /// that are not NUL-terminated pairs of UTF-8 (close 1002).
    case protocolViolation(String)
    /// A frame whose checksum does not match, or compressed data that does not inflate (close 1002).
    case corrupt(String)
    /// A message or the partly received messages over `BlipLimits` (close 1009).
    case tooBig(String)
    /// The application's message cannot be sent: a property with a NUL, a reply to no request, a second reply.
    case invalidMessage(String)
    /// The outbox holds `BlipLimits.maxOutboxBytes` already: the peer is not reading or acknowledging.
    case outboxFull

    /// The WebSocket close code that reports a peer's error (1002, or 1009 for sizes).
    public var closeCode: UInt16 {
        switch self {
        case .tooBig: 1009
        default: 1002
        }
    }
}
