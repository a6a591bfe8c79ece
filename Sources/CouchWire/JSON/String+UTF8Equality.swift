extension String {
    /// Whether two strings have the same UTF-8 bytes.
    ///
    /// JSON compares strings by code units (JavaScript, jiffy), while Swift's `==` uses canonical
    /// equivalence, under which `"é"` (U+00E9) equals `"e\u{301}"`. Object keys and string values must not
    /// be merged that way, so JSON code compares bytes.
    @inline(__always)
    public func utf8Equals(_ other: String) -> Bool {
        let left = utf8
        let right = other.utf8
        guard left.count == right.count else { return false }
        let fast = left.withContiguousStorageIfAvailable { leftBytes in
            right.withContiguousStorageIfAvailable { rightBytes in
                UnsafeRawBufferPointer(leftBytes).elementsEqual(UnsafeRawBufferPointer(rightBytes))
            }
        }
        if let fast, let result = fast { return result }
        return left.elementsEqual(right)
    }
}

/// A dictionary key that hashes and compares a string by its UTF-8 bytes (see `String.utf8Equals`).
struct UTF8Key: Hashable {
    let string: String

    static func == (lhs: UTF8Key, rhs: UTF8Key) -> Bool { lhs.string.utf8Equals(rhs.string) }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil {
            for byte in string.utf8 { hasher.combine(byte) }
        }
        hasher.combine(0xFF as UInt8)  // terminator, so that concatenations cannot collide structurally
    }
}
