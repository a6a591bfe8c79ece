import CouchWire

/// A user, role or admin name as every security decision compares it: by its UTF-8 bytes.
///
/// Swift's `String` `==`, `Set`, `Dictionary` and `contains` use canonical equivalence, under which
/// `"Kate"` equals `"\u{212A}ate"` (KELVIN SIGN) and `"josé"` in NFC equals it in NFD. User documents,
/// logins and `_security` lists are keyed by bytes (CouchDB compares Erlang binaries), so a name that
/// merely *looks* equal is another person: comparing those as `String`s let a look-alike twin take
/// over the victim's databases and `_users` document.
///
/// couchlite neither normalises nor refuses non-normalised names (CouchDB accepts them and so must a
/// server it replicates with); it only ever compares them by bytes, here. Names in `UserContext`,
/// `SecurityObject`, `ServerAdmins`, `ServerIdentities` and the `Authenticator` are `ExactName`s, so
/// a canonical comparison cannot creep back in through them.
package struct ExactName: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name as sent; read it for output only, never compare it as a `String`.
    let text: String

    package init(_ text: String) { self.text = text }
    package init(stringLiteral text: String) { self.text = text }

    package var description: String { text }

    package static func == (lhs: ExactName, rhs: ExactName) -> Bool { lhs.text.utf8Equals(rhs.text) }

    package func hash(into hasher: inout Hasher) {
        for byte in text.utf8 { hasher.combine(byte) }
        hasher.combine(0xFF as UInt8)  // no UTF-8 byte is 0xFF: a terminator, so prefixes cannot collide
    }

    /// Names in byte order, for comparing two lists as sets of names.
    static func sortedByBytes(_ texts: [String]) -> [ExactName] {
        texts.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { ExactName($0) }
    }

    /// Whether the name's bytes start with `prefix`'s bytes (`String.hasPrefix` compares characters,
    /// so `"_\u{301}x".hasPrefix("_")` is false while CouchDB sees a leading underscore).
    package func hasBytePrefix(_ prefix: String) -> Bool { text.hasBytePrefix(prefix) }
}

extension String {
    /// Whether this string's UTF-8 bytes start with `prefix`'s: CouchDB's `<<"_design/", _/binary>>`.
    /// `hasPrefix` compares grapheme clusters, so `"_design/\u{301}x".hasPrefix("_design/")` is false
    /// although the id is a design document to CouchDB and to the store.
    package func hasBytePrefix(_ prefix: String) -> Bool { utf8.starts(with: prefix.utf8) }

    /// The bytes after `prefix`, when the string starts with it byte for byte.
    func afterBytePrefix(_ prefix: String) -> String? {
        guard hasBytePrefix(prefix) else { return nil }
        return String(decoding: utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
    }

    /// Whether the UTF-8 bytes contain `byte` (`contains(":")` misses a colon followed by a
    /// combining mark, which forms one character with it).
    func containsByte(_ byte: UInt8) -> Bool { utf8.contains(byte) }
}
