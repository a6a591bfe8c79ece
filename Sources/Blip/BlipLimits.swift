/// Limits of one BLIP connection, checked as frames arrive and as messages are queued, so that no peer (one that
/// sends endless messages, deflate bombs, or never acknowledges) can make the server buffer without bound.
public struct BlipLimits: Sendable, Equatable {
    /// Largest message received (properties and body, decompressed), in bytes (32 MiB). Larger → close 1009.
    public var maxIncomingMessageBytes: Int
    /// Most incoming messages partly received at once (count, 64). More → close 1002.
    public var maxPartialIncomingMessages: Int
    /// Most bytes held by all partly received messages together, in bytes (64 MiB). More → close 1009.
    public var maxPartialIncomingBytes: Int
    /// Largest frame received, in bytes (1 MiB, the WebSocket layer's message limit; LiteCore sends ≤ 16 KiB).
    /// Larger → close 1009.
    public var maxIncomingFrameBytes: Int
    /// Most bytes of outgoing messages queued and not yet sent, in bytes (16 MiB): `send` and `respond` refuse more
    /// (`BlipError.outboxFull`), so a peer that stops reading or acknowledging holds at most this much.
    public var maxOutboxBytes: Int

    /// Largest frame we send, in bytes (16 KiB), LiteCore's `kBigFrameSize`.
    public static let bigFrameBytes = 16384
    /// The frame size while an urgent message waits behind the one being sent, in bytes (4 KiB), LiteCore's
    /// `kDefaultFrameSize`.
    public static let smallFrameBytes = 4096
    /// Largest properties block, in bytes (100 KiB), LiteCore's `kMaxPropertiesSize`.
    public static let maxPropertiesBytes = 100 * 1024
    /// Bytes of one incoming message after which an ACK is sent, in bytes (50,000), LiteCore's
    /// `kIncomingAckThreshold`.
    public static let ackThresholdBytes = 50_000
    /// Bytes of one outgoing message sent but not acknowledged at which it pauses, in bytes (128,000), LiteCore's
    /// `kMaxUnackedBytes`.
    public static let maxUnackedBytes = 128_000
    /// Longest varint (message numbers, flags, lengths), in bytes: ten hold 64 bits.
    public static let maxVarintBytes = 10

    public init(
        maxIncomingMessageBytes: Int = 32 * 1024 * 1024, maxPartialIncomingMessages: Int = 64,
        maxPartialIncomingBytes: Int = 64 * 1024 * 1024, maxIncomingFrameBytes: Int = 1024 * 1024,
        maxOutboxBytes: Int = 16 * 1024 * 1024
    ) {
        self.maxIncomingFrameBytes = maxIncomingFrameBytes
        self.maxIncomingMessageBytes = maxIncomingMessageBytes
        self.maxPartialIncomingMessages = maxPartialIncomingMessages
        self.maxPartialIncomingBytes = maxPartialIncomingBytes
        self.maxOutboxBytes = maxOutboxBytes
    }
}
