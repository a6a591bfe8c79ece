import RevTree

// What the tree tests (RevTreeTests) and the store tests (CouchStoreTests) both build their cases from: rev ids
// from text, a seeded generator and the reference model of a history. A target of its own because one test
// target cannot import another.

/// A rev id from its text (`r("2-b")`); text that is no rev id gives `-1-invalid`, which no test expects.
public func r(_ text: String) -> RevID {
    (try? RevID(parsing: text)) ?? RevID(pos: -1, hash: "invalid")
}

/// A path from leaf to root given oldest first, e.g. `chain("1-a", "2-b")` → [2-b, 1-a].
public func chain(_ revs: String...) -> [RevID] { revs.reversed().map(r) }

/// Deterministic generator so failures reproduce from the seed.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64

    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The reference model: a "true" history (every rev's real parent and deletion flag), and the set of revs that
/// have been merged. Its leaves and winner are computed the obvious way, without any of RevTree's comparisons.
public struct ReferenceHistory {
    public var parent: [RevID: RevID] = [:]
    public var deleted: [RevID: Bool] = [:]
    public var all: [RevID] = []

    public init(size: Int, using rng: inout SplitMix64) {
        for index in 0..<size {
            let parentRev: RevID? =
                (index == 0 || Int.random(in: 0..<8, using: &rng) == 0)
                ? nil : all.randomElement(using: &rng)
            // Text hashes, and every third one 32 hex digits (compared as its 16 bytes, against text ones too).
            let rev = RevID(pos: (parentRev?.pos ?? 0) + 1, hash: index % 3 == 0 ? Self.hexHash(index) : "\(index)h")
            if let parentRev { parent[rev] = parentRev }
            deleted[rev] = Int.random(in: 0..<4, using: &rng) == 0
            all.append(rev)
        }
    }

    /// A path from `leaf` up at most `length` revisions.
    public func path(to leaf: RevID, length: Int) -> [RevID] {
        var out = [leaf]
        while out.count < length, let up = parent[out[out.count - 1]] { out.append(up) }
        return out
    }

    /// 32 lowercase hex digits made from `index`.
    public static func hexHash(_ index: Int) -> String {
        let digits = String(UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
        let padded = String(repeating: "0", count: 16 - digits.count) + digits
        return padded + String(padded.reversed())
    }

    /// The binary CouchDB keeps for a hash (`couch_doc:parse_revid`): 32 hex digits are their 16 bytes, anything
    /// else is its UTF-8 text.
    public static func binary(_ hash: String) -> [UInt8] {
        let text = Array(hash.utf8)
        let nibbles = text.compactMap { UInt8(String(UnicodeScalar($0)), radix: 16) }
        guard text.count == 32, nibbles.count == 32 else { return text }
        return stride(from: 0, to: 32, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    /// CouchDB's winner rule written out: a live leaf beats a deleted one, then the higher generation wins, then
    /// the greater hash binary, compared byte by byte as Erlang compares binaries (a proper prefix is smaller).
    public static func beats(_ a: (rev: RevID, deleted: Bool), _ b: (rev: RevID, deleted: Bool)) -> Bool {
        if a.deleted != b.deleted { return b.deleted }
        if a.rev.pos != b.rev.pos { return a.rev.pos > b.rev.pos }
        let (x, y) = (binary(a.rev.hash), binary(b.rev.hash))
        for (p, q) in zip(x, y) where p != q { return p > q }
        return x.count > y.count
    }

    public func winner(of merged: Set<RevID>) -> RevID? {
        let parents = Set(merged.compactMap { parent[$0] }.filter(merged.contains))
        var best: RevID?
        for leaf in merged.subtracting(parents) {
            guard let current = best else {
                best = leaf
                continue
            }
            if Self.beats((leaf, deleted[leaf] ?? false), (current, deleted[current] ?? false)) { best = leaf }
        }
        return best
    }
}
