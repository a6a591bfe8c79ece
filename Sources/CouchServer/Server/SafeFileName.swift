import CouchCrypto

/// A file or directory name for a database that is harmless whatever the name holds (`/`, `..`):
/// the hex of its UTF-8 bytes, or, for names whose hex would pass the 255-byte file name limit
/// (database names reach 238 bytes), `sha256-` and the hex of their SHA-256.
enum SafeFileName {
    /// Longest name, in bytes, whose hex is used as is.
    static let hexNameBytes = 100

    static func of(_ name: String) -> String {
        let bytes = Array(name.utf8)
        return bytes.count <= hexNameBytes ? bytes.hexString : "sha256-" + Digest.hash(.sha256, bytes).hexString
    }
}
