/// Why the frame parser refused the peer's bytes; each case fails the connection with its close code.
public enum WebSocketError: Error, Sendable, Equatable {
    /// A frame broke RFC 6455 (reserved bits or opcodes, an unmasked client frame, a fragmented or oversized
    /// control frame, a continuation out of place, a non-minimal or 64-bit-overflowing length, a bad close frame).
    case protocolViolation(String)
    /// A text message or close reason that is not UTF-8 (1007).
    case invalidUTF8
    /// A frame or message longer than `WebSocketLimits` allow (1009).
    case tooBig(String)

    /// The code of the CLOSE frame that reports the error to the peer.
    public var closeCode: WebSocketCloseCode {
        switch self {
        case .protocolViolation: .protocolError
        case .invalidUTF8: .invalidPayload
        case .tooBig: .messageTooBig
        }
    }

    /// A short reason for the CLOSE frame and the logs.
    public var reason: String {
        switch self {
        case .protocolViolation(let reason), .tooBig(let reason): reason
        case .invalidUTF8: "Invalid UTF-8 in a text message."
        }
    }
}
