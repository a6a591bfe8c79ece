import CouchWire

/// How a live feed (`_changes`, `_db_updates`) waits for what comes next: in slices of at most a second, so a
/// client that left is noticed, sending a heartbeat when one is due (`\n`, or an `event: heartbeat` for
/// eventsource), until the deadline (none while heartbeats keep the feed open).
struct LiveFeedWait {
    let out: ResponseStream
    let heartbeat: Duration?
    let eventsource: Bool

    /// Waits until `arrived(slice)` — which blocks at most `slice` — says something came.
    /// - Parameter ended: whether nothing more can come (the database was deleted).
    /// - Returns: false when the feed should end (deadline, client gone, `ended`).
    func wait(
        until deadline: ContinuousClock.Instant?, ended: () -> Bool = { false }, arrived: (Duration) -> Bool
    ) throws -> Bool {
        var nextBeat = heartbeat.map { ContinuousClock.now + $0 }
        while true {
            let now = ContinuousClock.now
            if let deadline, now >= deadline { return false }
            var slice = ChangesQuery.livenessInterval
            if let deadline { slice = min(slice, deadline - now) }
            if let nextBeat { slice = min(slice, max(nextBeat - now, .zero)) }
            if arrived(slice) { return true }
            if ended() || out.isPeerClosed() { return false }
            if let beat = heartbeat, let due = nextBeat, ContinuousClock.now >= due {
                try out.write(eventsource ? "event: heartbeat\ndata: \n\n" : "\n")
                try out.flush()
                nextBeat = ContinuousClock.now + beat
            }
        }
    }
}
