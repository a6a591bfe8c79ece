/// A revision id `N-hash`: generation `pos` (1 for the first revision) and an opaque hash.
///
/// CouchDB (`couch_doc:parse_rev`) splits at the first `-`, requires an integer before it and treats the rest as
/// opaque bytes; we do the same, additionally requiring a non-empty hash of at most `RevTreeLimits.maxHashBytes`
/// bytes without control characters. Ordering is by `pos`, then by the UTF-8 bytes of `hash` (CouchDB stores 32-hex
/// hashes as 16 bytes, so byte order of lowercase hex equals its order); never by the `"N-hash"` string.
public struct RevID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Generation number.
    public var pos: Int
    /// Opaque hash (lowercase hex for revisions this server creates).
    public var hash: String

    public init(pos: Int, hash: String) {
        self.pos = pos
        self.hash = hash
    }

    /// Parses `N-hash`.
    /// - Throws: `RevTreeError.invalidRevFormat` ("Invalid rev format", 400) for anything else. `N` may be 0
    ///   (CouchDB parses `0-x`; such a rev is simply never found in a tree).
    public init(parsing text: String) throws(RevTreeError) {
        let bytes = Array(text.utf8)
        guard let dash = bytes.firstIndex(of: UInt8(ascii: "-")), dash > 0,
            dash <= RevTreeLimits.maxPosDigits
        else { throw .invalidRevFormat }
        var pos = 0
        for byte in bytes[..<dash] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw .invalidRevFormat }
            pos = pos * 10 + Int(byte - UInt8(ascii: "0"))
        }
        let hashBytes = bytes[(dash + 1)...]
        try RevID.validateHash(hashBytes)
        self.pos = pos
        self.hash = String(decoding: hashBytes, as: UTF8.self)
    }

    /// Checks a hash taken from `_revisions.ids`.
    static func validateHash<C: Collection>(_ bytes: C) throws(RevTreeError) where C.Element == UInt8 {
        guard !bytes.isEmpty, bytes.count <= RevTreeLimits.maxHashBytes else { throw .invalidRevFormat }
        for byte in bytes where byte < 0x20 || byte == 0x7f { throw .invalidRevFormat }
    }

    /// `validateHash` over a string's contiguous UTF-8 (every native Swift string), without the generic
    /// `UTF8View` iteration that showed up at 4,000 instructions per replicated document.
    static func validateHash(_ hash: String) throws(RevTreeError) {
        let valid = hash.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.isEmpty, bytes.count <= RevTreeLimits.maxHashBytes else { return false }
            var bad = false
            for byte in bytes { bad = bad || byte < 0x20 || byte == 0x7f }
            return !bad
        }
        if let valid {
            guard valid else { throw .invalidRevFormat }
        } else {
            try validateHash(hash.utf8)
        }
    }

    public var description: String { "\(pos)-\(hash)" }

    public static func < (lhs: RevID, rhs: RevID) -> Bool {
        if lhs.pos != rhs.pos { return lhs.pos < rhs.pos }
        return lhs.hash.utf8.lexicographicallyPrecedes(rhs.hash.utf8)
    }

    /// Builds the path of a replicated revision from `_revisions {start, ids}`: leaf first, then its consecutive
    /// ancestors (`start`, `start-1`, …).
    /// - Throws: `.invalidRevisions` when `ids` is empty, `start < ids.count` (generations would reach 0 or below),
    ///   `.pathTooLong` above `RevTreeLimits.maxPathLength`, `.invalidRevFormat` for a bad hash.
    public static func path(start: Int, ids: [String]) throws(RevTreeError) -> [RevID] {
        guard !ids.isEmpty else { throw .invalidRevisions("_revisions.ids is empty") }
        guard ids.count <= RevTreeLimits.maxPathLength else { throw .pathTooLong(ids.count) }
        guard start >= 1, start >= ids.count, start < 1_000_000_000_000_000 else {
            throw .invalidRevisions("_revisions.start must be at least the number of ids")
        }
        var path = [RevID]()
        path.reserveCapacity(ids.count)
        for (offset, id) in ids.enumerated() {
            try validateHash(id)
            path.append(RevID(pos: start - offset, hash: id))
        }
        return path
    }

    /// Checks that a path is non-empty, leaf first, consecutive, with generations ≥ 1 and valid hashes.
    public static func validate(path: [RevID]) throws(RevTreeError) {
        guard let leaf = path.first else { throw .invalidRevisions("empty revision path") }
        guard path.count <= RevTreeLimits.maxPathLength else { throw .pathTooLong(path.count) }
        for (offset, rev) in path.enumerated() {
            guard rev.pos == leaf.pos - offset, rev.pos >= 1 else {
                throw .invalidRevisions("revision path is not consecutive")
            }
            try validateHash(rev.hash)
        }
    }
}
