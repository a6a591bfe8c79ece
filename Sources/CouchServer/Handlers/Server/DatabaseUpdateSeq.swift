import CouchWire

/// The wire form of a `_db_updates` sequence, and what a client's `since` names.
///
/// CouchDB's sequences are opaque strings, `N-` and a term naming its shards; a `since` from another server (or
/// another shard map) is read from 0 for what it cannot place. couchlite's are `N-` and the URL-safe base64 of
/// `N` and the log's epoch (``DatabaseUpdateLog/epoch``, random at its creation), so a `since` this log did not
/// hand out — another server's, a CouchDB's, or this data dir's before its log was lost — is told apart and read
/// from 0 too: the client sees every event kept again rather than missing the ones numbered below its `since`.
struct DatabaseUpdateSeq {
    let epoch: UInt64

    /// `N-` and the base64 of N and the epoch, big-endian, without padding.
    func format(_ seq: Int) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for value in [UInt64(clamping: seq), epoch] {
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: value >> shift))
            }
        }
        return "\(seq)-\(UpdateSeq.opaque(bytes))"
    }

    /// The sequence to read after for `since` (not `now`), given the log's latest `lastSeq`.
    /// - Returns: the number of a sequence of this log, or of a bare number (as `_changes` takes one) not beyond
    ///   `lastSeq`; 0 for a well-formed sequence this log did not hand out (another epoch, or beyond `lastSeq`).
    /// - Throws: `badRequest` (CouchDB's reason) unless the text is digits, alone or followed by `-` and anything,
    ///   optionally in double quotes, that fit an `Int`: negative numbers, garbage, numbers past `Int.max`.
    func after(_ since: String, lastSeq: Int) throws(CouchError) -> Int {
        guard let seq = UpdateSeq.parse(since) else {
            throw .badRequest("Malformed sequence supplied in 'since' parameter.")
        }
        var body = Substring(since)
        if body.first == "\"", body.count >= 2, body.last == "\"" { body = body.dropFirst().dropLast() }
        let ours = !body.contains("-") || body == format(seq)
        return ours && seq <= lastSeq ? seq : 0
    }
}
