/// Update sequences on the wire, in CouchDB 3's shape.
///
/// CouchDB 3 sends every sequence (`_changes` `seq` and `last_seq`, `update_seq`, `purge_seq`) as a string
/// `N-<opaque>`: `N` is the sum of its shards' sequences, which clients (PouchDB, client libraries, their test
/// suites) read as a number, and the opaque part, which only the server decodes. A couchlite database is one
/// shard, so `N` is the sequence itself; the opaque part is the same number, eight bytes big-endian in
/// unpadded base64url, so one sequence always reads the same.
///
/// Back in `since` every form a client may hold is accepted: `N-<anything>` (ours, or a token kept from
/// elsewhere: only `N` is read), `N`, and either of them in JSON quotes (`"N"`), as CouchDB's
/// `^"?([0-9]+-)?(.*?)"?$` takes them.
public enum UpdateSeq {
    /// The wire form of `seq`: `12-AAAAAAAAAAw`.
    public static func format(_ seq: Int) -> String {
        let value = UInt64(clamping: seq)
        var bytes = [UInt8](repeating: 0, count: 8)
        for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64(index))) }
        return "\(seq)-\(opaque(bytes))"
    }

    /// The opaque part of a sequence: `bytes` in URL-safe base64 without padding (safe in a query string).
    public static func opaque(_ bytes: [UInt8]) -> String {
        var encoded: [UInt8] = []
        Base64.encode(bytes, into: &encoded)
        var opaque = ""
        opaque.reserveCapacity(encoded.count)
        for byte in encoded {
            switch byte {
            case UInt8(ascii: "+"): opaque.append("-")
            case UInt8(ascii: "/"): opaque.append("_")
            case UInt8(ascii: "="): continue
            default: opaque.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return opaque
    }

    /// The sequence a `since` value names.
    /// - Returns: nil unless the text is decimal digits, alone or followed by `-` and anything, optionally in
    ///   double quotes; nil as well for a number that does not fit an `Int`.
    public static func parse(_ text: some StringProtocol) -> Int? {
        var body = Substring(text)
        if body.first == "\"" { body.removeFirst() }
        if body.last == "\"" { body.removeLast() }
        let digits = body.prefix { $0 >= "0" && $0 <= "9" }
        guard !digits.isEmpty else { return nil }
        let rest = body[digits.endIndex...]
        guard rest.isEmpty || rest.first == "-" else { return nil }
        return Int(digits)
    }
}
