/// A complete data message: every fragment of it joined, unmasked.
public enum WebSocketMessage: Sendable, Equatable {
    /// A text message, checked to be UTF-8.
    case text(String)
    /// A binary message (BLIP sends only these).
    case binary([UInt8])
}

/// What one complete frame (or, for data, one complete message) means to the connection.
public enum WebSocketEvent: Sendable, Equatable {
    case message(WebSocketMessage)
    /// A PING with its payload, to be echoed in a PONG.
    case ping([UInt8])
    /// A PONG with its payload.
    case pong([UInt8])
    /// A CLOSE: its code (nil when the frame had none, 1005) and UTF-8 reason.
    case close(code: WebSocketCloseCode?, reason: String)
}
