extension Duration {
    /// Whole milliseconds (truncated), for the replication loop's short sleeps.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
