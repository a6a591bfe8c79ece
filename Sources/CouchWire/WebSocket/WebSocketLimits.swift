/// Limits and timeouts of a WebSocket connection ([RFC 6455](https://www.rfc-editor.org/rfc/rfc6455)), checked as
/// bytes arrive, so no peer can make the server buffer without bound or hold a connection silently.
public struct WebSocketLimits: Sendable, Equatable {
    /// Largest payload of one data frame, in bytes (1 MiB by default). Larger → close 1009.
    public var maxFrameBytes: Int
    /// Largest message (the payloads of a frame and its continuations together), in bytes (1 MiB by default).
    /// Larger → close 1009. BLIP sends one BLIP frame per message, which LiteCore keeps at ≤ 16 KiB.
    public var maxMessageBytes: Int
    /// Silence (no byte received) after which the server sends a PING (60 s by default).
    public var pingInterval: Duration
    /// How long a PING may go unanswered by any byte before the connection is dropped (20 s, LiteCore's own).
    public var pongTimeout: Duration
    /// How long the peer has to answer our CLOSE before the TCP connection is closed anyway (5 s, LiteCore's own).
    public var closeTimeout: Duration
    /// How long a frame (or a fragmented message) may take from its first byte to its last (60 s by default), so a
    /// peer that trickles a byte now and then, which keeps the silence timer from firing, cannot hold the connection
    /// with a frame that never ends. Longer → close 1008. LiteCore's frames are ≤ 16 KiB and sent at once.
    public var frameTimeout: Duration

    /// The control frames' payload limit fixed by RFC 6455 §5.5, in bytes.
    public static let maxControlPayloadBytes = 125

    public init(
        maxFrameBytes: Int = 1024 * 1024, maxMessageBytes: Int = 1024 * 1024, pingInterval: Duration = .seconds(60),
        pongTimeout: Duration = .seconds(20), closeTimeout: Duration = .seconds(5),
        frameTimeout: Duration = .seconds(60)
    ) {
        self.frameTimeout = frameTimeout
        self.maxFrameBytes = maxFrameBytes
        self.maxMessageBytes = maxMessageBytes
        self.pingInterval = pingInterval
        self.pongTimeout = pongTimeout
        self.closeTimeout = closeTimeout
    }
}
