extension Duration {
    /// The duration in seconds, as Foundation's `TimeInterval` (sleeps, condition waits, messages).
    public var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration in nanoseconds, clamped to `0...UInt64.max / 2` (2^32 s, 136 years): a setting of 2^63-1 ms
    /// is a wait that never ends, not an overflow.
    public var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let capped = min(UInt64(seconds), 1 << 32)
        return capped * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
