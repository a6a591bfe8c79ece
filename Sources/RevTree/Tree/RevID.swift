/// A revision id `N-hash`: generation `pos` (1 for the first revision) and an opaque hash.
///
/// CouchDB (`couch_doc:parse_rev`) splits at the first `-`, requires an integer before it and keeps the rest as a
/// binary: a 32-character rest must be hexadecimal and becomes its 16 raw bytes, anything else stays as its text;
/// on the way out a 16-byte binary is written as 32 lowercase hex digits (`couch_doc:revid_to_str`). We keep the
/// text form of that binary, so parsing normalizes exactly as CouchDB's round trip does: 32 hex digits in any case
/// become lowercase, a 16-byte text becomes the hex of its bytes, and 32 characters that are not hex are refused.
/// We also require a hash of at most `RevTreeLimits.maxHashBytes` bytes without control characters. The hash may be
/// empty: CouchDB stores a replicated bare `1-` (`new_edits=false`) as generation 1 with an empty hash and answers
/// it back as `1-` (PouchDB's test "7829 bare rev 1- with new_edits=false").
/// Ordering is by `pos`, then by that binary (see `hashPrecedes`), never by the `"N-hash"` string.
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
        self.hash = try RevID.normalizedHash(hashBytes)
    }

    /// The text CouchDB answers for a hash it was sent (see the type's comment): lowercase for 32 hex digits, the
    /// hex of the bytes for a 16-byte hash, the hash itself otherwise.
    /// - Throws: `.invalidRevFormat` for 32 bytes that are not all hex digits (CouchDB's `list_to_integer` fails).
    static func normalizedHash<C: Collection>(_ bytes: C) throws(RevTreeError) -> String where C.Element == UInt8 {
        switch bytes.count {
        case 32:
            var lower = [UInt8]()
            lower.reserveCapacity(32)
            for byte in bytes {
                guard RevID.hexValue(byte) != nil else { throw .invalidRevFormat }
                lower.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F") ? byte + 32 : byte)
            }
            return String(decoding: lower, as: UTF8.self)
        case 16:
            let digits = Array("0123456789abcdef".utf8)
            var hex = [UInt8]()
            hex.reserveCapacity(32)
            for byte in bytes {
                hex.append(digits[Int(byte >> 4)])
                hex.append(digits[Int(byte & 0x0f)])
            }
            return String(decoding: hex, as: UTF8.self)
        default:
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// `normalizedHash` of a string; returns it unchanged (no copy) in the common case of neither 16 nor 32 bytes
    /// or 32 lowercase hex digits.
    static func normalizedHash(_ hash: String) throws(RevTreeError) -> String {
        let count = hash.utf8.count
        guard count == 16 || count == 32 else { return hash }
        let lowerHex = hash.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
        }
        if count == 32, lowerHex == true { return hash }
        return try normalizedHash(Array(hash.utf8))
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Checks a hash taken from `_revisions.ids` or a rev's text after its `-` (empty is allowed, as CouchDB does).
    static func validateHash<C: Collection>(_ bytes: C) throws(RevTreeError) where C.Element == UInt8 {
        guard bytes.count <= RevTreeLimits.maxHashBytes else { throw .invalidRevFormat }
        for byte in bytes where byte < 0x20 || byte == 0x7f { throw .invalidRevFormat }
    }

    /// `validateHash` over a string's contiguous UTF-8 (every native Swift string), without the generic
    /// `UTF8View` iteration that showed up at 4,000 instructions per replicated document.
    static func validateHash(_ hash: String) throws(RevTreeError) {
        let valid = hash.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard bytes.count <= RevTreeLimits.maxHashBytes else { return false }
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
        return hashPrecedes(lhs.hash, rhs.hash)
    }

    /// CouchDB's order of two hashes of one generation: Erlang's order of the binaries `couch_doc:parse_revid`
    /// makes, bytewise with a prefix first. A 32-hex-digit hash (of either case) is its 16 raw bytes, any other
    /// hash its UTF-8 text, so a hex hash and a text one compare as those bytes against each other
    /// (`ff…` = 0xff… sorts above `zz`, `61…` = "a…" below "b").
    public static func hashPrecedes(_ lhs: String, _ rhs: String) -> Bool {
        if let answer = lhs.utf8.withContiguousStorageIfAvailable({ left in
            rhs.utf8.withContiguousStorageIfAvailable { right in keyPrecedes(left, right) }
        }), let answer {
            return answer
        }
        return keyPrecedes(Array(lhs.utf8), Array(rhs.utf8))
    }

    private static func keyPrecedes<L: RandomAccessCollection, R: RandomAccessCollection>(_ lhs: L, _ rhs: R) -> Bool
    where L.Element == UInt8, R.Element == UInt8, L.Index == Int, R.Index == Int {
        let lhsHex = isHex32(lhs)
        let rhsHex = isHex32(rhs)
        let lhsCount = lhsHex ? 16 : lhs.count
        let rhsCount = rhsHex ? 16 : rhs.count
        for offset in 0..<min(lhsCount, rhsCount) {
            let left = lhsHex ? hexByte(lhs, offset) : lhs[lhs.startIndex + offset]
            let right = rhsHex ? hexByte(rhs, offset) : rhs[rhs.startIndex + offset]
            if left != right { return left < right }
        }
        return lhsCount < rhsCount
    }

    static func isHex32<C: RandomAccessCollection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        bytes.count == 32 && bytes.allSatisfy { hexValue($0) != nil }
    }

    /// The `offset`th of the 16 bytes 32 hex digits spell.
    static func hexByte<C: RandomAccessCollection>(_ digits: C, _ offset: Int) -> UInt8
    where C.Element == UInt8, C.Index == Int {
        let high = hexValue(digits[digits.startIndex + 2 * offset]) ?? 0
        let low = hexValue(digits[digits.startIndex + 2 * offset + 1]) ?? 0
        return high << 4 | low
    }

    /// Builds the path of a replicated revision from `_revisions {start, ids}`: leaf first, then its consecutive
    /// ancestors (`start`, `start-1`, …).
    /// Generation 0 is a revision like any other (CouchDB 3.4.3 stores a replicated `0-x` and edits on top of it);
    /// generations below 0, which CouchDB also stores, are refused.
    /// - Throws: `.invalidRevisions` when `ids` is empty, `start < ids.count - 1` (generations would go below 0),
    ///   `.pathTooLong` above `RevTreeLimits.maxPathLength`, `.invalidRevFormat` for a bad hash, `.invalidHexRevID`
    ///   for 32 characters that are not hex digits. Hashes are normalized as `init(parsing:)` does.
    public static func path(start: Int, ids: [String]) throws(RevTreeError) -> [RevID] {
        guard !ids.isEmpty else { throw .invalidRevisions("_revisions.ids is empty") }
        guard ids.count <= RevTreeLimits.maxPathLength else { throw .pathTooLong(ids.count) }
        guard start >= ids.count - 1, start < 1_000_000_000_000_000 else {
            throw .invalidRevisions("_revisions.start must be at least the number of ids minus one")
        }
        var path = [RevID]()
        path.reserveCapacity(ids.count)
        for (offset, id) in ids.enumerated() {
            try validateHash(id)
            let hash: String
            do {
                hash = try normalizedHash(id)
            } catch {
                throw .invalidHexRevID
            }
            path.append(RevID(pos: start - offset, hash: hash))
        }
        return path
    }

    /// Checks that a path is non-empty, leaf first, consecutive, with generations ≥ 0 and valid hashes.
    public static func validate(path: [RevID]) throws(RevTreeError) {
        guard let leaf = path.first else { throw .invalidRevisions("empty revision path") }
        guard path.count <= RevTreeLimits.maxPathLength else { throw .pathTooLong(path.count) }
        for (offset, rev) in path.enumerated() {
            guard rev.pos == leaf.pos - offset, rev.pos >= 0 else {
                throw .invalidRevisions("revision path is not consecutive")
            }
            try validateHash(rev.hash)
        }
    }
}
