#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A point on the monotonic clock, used to bound every blocking wait of the engine (and, `package`, of the
/// replicator's client, whose reads on an `HTTPSocket` take one).
package struct HTTPDeadline: Sendable, Comparable {
    /// Nanoseconds on CLOCK_MONOTONIC.
    let nanoseconds: UInt64

    static func now() -> HTTPDeadline {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return HTTPDeadline(nanoseconds: UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec))
    }

    /// The deadline `duration` from now (negative durations count as zero).
    package static func after(_ duration: Duration) -> HTTPDeadline {
        HTTPDeadline(nanoseconds: now().nanoseconds &+ duration.clampedNanoseconds)
    }

    /// Milliseconds left, rounded up, as a `poll` timeout (0 once passed).
    var remainingMilliseconds: Int32 {
        let current = Self.now().nanoseconds
        guard nanoseconds > current else { return 0 }
        let millis = (nanoseconds - current + 999_999) / 1_000_000
        return Int32(min(millis, UInt64(Int32.max)))
    }

    package static func < (lhs: HTTPDeadline, rhs: HTTPDeadline) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
