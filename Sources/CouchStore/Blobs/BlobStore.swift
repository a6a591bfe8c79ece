import CouchCrypto
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Content-addressed, deduplicated attachment storage: one directory per database, one file per
/// distinct content, named by the lowercase hex md5 of its bytes.
///
/// Layout: `directory/ab/abcdef…` (fanned out by the first two hex characters, so no directory
/// grows past a few thousand entries) and `directory/tmp/` for uploads in progress. A blob
/// becomes visible only by `rename` after `fsync`, so a crash mid-upload leaves nothing
/// half-written under a key; `init` deletes the temp files such a crash leaves.
///
/// Thread-safe: the store holds only immutable paths; every operation is a self-contained set of
/// system calls, and concurrent commits of the same content both end with one intact file.
/// Use one `BlobStore` per directory per process: temp files are tagged with a per-process token,
/// and `init` removes every temp file from other processes.
public final class BlobStore: Sendable {
    /// The store's root directory.
    public let directory: String
    let tempDirectory: String

    /// Tags this process's temp files, so `init` can tell a crashed process's leftovers from
    /// uploads another `BlobStore` in this process has in flight.
    static let processToken: String = Secrets.randomBytes(8).hexString

    /// Keys whose directory entry is known to be on disk: a directory fsync finished after the blob
    /// was renamed in, during this process's life. Committing such a blob again needs no directory
    /// fsync, which on this class of disk is a device flush in every repeated upload's path.
    /// `removeAll` forgets what it deletes (a blob renamed in again is remembered only after its own
    /// sync); a store opened on an existing directory knows nothing until it syncs.
    private let durableEntries = Mutex<Set<PackedKey>>([])
    /// Most keys remembered; the set starts over when full (forgetting only costs a sync). At 16 bytes a key (and
    /// the set's slack) that is at most about 512 KiB a database; kept as `String`s, 65,536 of them were 6 MiB a
    /// database, and the soak's heap grew by their share as photos arrived.
    static let maxDurableEntries = 16_384

    /// Opens (creating if needed) a store and removes temp files left by a crashed process.
    /// - Parameter directory: The database's blob directory; parents are created too.
    /// - Throws: ``BlobStoreError/io(operation:path:errno:)`` if the directories cannot be made.
    public init(directory: String) throws {
        let trimmed = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.directory = trimmed
        tempDirectory = trimmed + "/tmp"
        try POSIX.makeDirectories(trimmed)
        try POSIX.makeDirectory(tempDirectory)
        for name in try POSIX.list(tempDirectory) where !name.hasPrefix(Self.processToken + "-") {
            if unlink(tempDirectory + "/" + name) != 0, errno != ENOENT {
                throw BlobStoreError.io(operation: "unlink", path: tempDirectory + "/" + name, errno: errno)
            }
        }
    }

    /// Starts an upload into a new temp file, or, when the bytes are announced as a blob already stored,
    /// a writer that only hashes them.
    ///
    /// A replicator announces each attachment's md5 before its bytes; most repeat a stored blob (the same
    /// photo in many revisions or documents), and writing, syncing and deleting a copy of those is most of
    /// an upload's cost. The expected blob's time is refreshed here, so compaction (which spares recently
    /// touched blobs, see ``removeAll(except:minimumAge:)``) keeps it until the hash-only writer commits;
    /// make the writer under the same exclusion from compaction as a commit.
    /// - Parameters:
    ///   - sha1: Also compute the sha1 digest (Couchbase Lite's `sha1-` digests); costs ~40 % more hashing.
    ///   - key: The md5 (lowercase hex) the bytes are announced to have, if any.
    /// - Returns: A writer; commit it to store the blob, or abort it.
    public func makeWriter(sha1: Bool = false, expecting key: String? = nil) throws -> BlobWriter {
        if let key, let path = path(for: key), utimensat(AT_FDCWD, path, nil, 0) == 0 {
            return BlobWriter(store: self, verifying: key, sha1: sha1)
        }
        let path = tempDirectory + "/" + Self.processToken + "-" + Secrets.randomBytes(12).hexString + ".tmp"
        let fd = try POSIX.open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        return BlobWriter(store: self, tempPath: path, fd: fd, sha1: sha1)
    }

    /// Whether a blob with this key is stored. Invalid keys are never stored.
    public func exists(_ key: String) -> Bool {
        guard let path = path(for: key) else { return false }
        return access(path, F_OK) == 0
    }

    /// Opens a blob for reading. The reader keeps working even if the blob is removed meanwhile.
    /// - Parameter key: Lowercase hex md5 of the stored bytes.
    /// - Throws: `.invalidKey`, `.notFound`, or `.io`.
    public func openReader(_ key: String) throws -> BlobReader {
        let path = try validPath(for: key)
        guard POSIX.fileStatus(path) != nil else { throw BlobStoreError.notFound(key: key) }
        let fd = try POSIX.open(path, O_RDONLY)
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            close(fd)
            throw BlobStoreError.io(operation: "fstat", path: path, errno: code)
        }
        return BlobReader(fd: fd, length: Int(info.st_size), path: path)
    }

    /// Size in bytes of a stored blob.
    /// - Throws: `.invalidKey`, `.notFound`.
    public func size(_ key: String) throws -> Int {
        let path = try validPath(for: key)
        guard let info = POSIX.fileStatus(path) else { throw BlobStoreError.notFound(key: key) }
        return Int(info.st_size)
    }

    /// Every stored key (for compaction and checks).
    public func keys() throws -> [String] {
        var keys: [String] = []
        for fan in try POSIX.list(directory) where fan.utf8.count == 2 && Self.isHex(fan) {
            keys += try POSIX.list(directory + "/" + fan).filter { Self.isValidKey($0) && $0.hasPrefix(fan) }
        }
        return keys
    }

    /// Compaction: deletes every blob not in `keep`.
    ///
    /// A blob committed after the caller collected `keep` would be lost; pass `minimumAge` to
    /// spare blobs written (or re-committed, which refreshes their time) within that window.
    /// - Parameters:
    ///   - keep: Keys still referenced by some revision.
    ///   - minimumAge: Blobs modified more recently than this are kept regardless.
    /// - Returns: How many blobs were removed.
    public func removeAll(except keep: Set<String>, minimumAge: Duration = .zero) throws -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let cutoff = Int64(now.tv_sec) - minimumAge.components.seconds
        var removed = 0
        for key in try keys() where !keep.contains(key) {
            guard let path = path(for: key), let info = POSIX.fileStatus(path) else { continue }
            if minimumAge > .zero, Int64(info.st_mtim.tv_sec) >= cutoff { continue }
            if let packed = PackedKey(key) { durableEntries.withLock { _ = $0.remove(packed) } }
            if unlink(path) == 0 {
                removed += 1
            } else if errno != ENOENT {
                throw BlobStoreError.io(operation: "unlink", path: path, errno: errno)
            }
        }
        return removed
    }

    /// Deletes the whole directory (the database was deleted). Open readers keep working.
    /// - Parameter trash: Where the directory is moved to be removed in the background. Without one, or when it
    ///   cannot be moved there, its files are removed before this returns.
    public func destroy(via trash: Trash? = nil) throws {
        durableEntries.withLock { $0.removeAll() }
        if let trash, trash.take(directory) { return }
        try POSIX.removeTree(directory)
    }

    /// Whether `key`'s directory entry is known to be on disk (see `durableEntries`).
    public func isKnownDurable(_ key: String) -> Bool {
        guard let packed = PackedKey(key) else { return false }
        return durableEntries.withLock { $0.contains(packed) }
    }

    /// Makes `key`'s directory entry durable: fsyncs its fan-out directory, unless the blob was not
    /// just renamed in and a sync since it was is known to have finished.
    func syncEntry(_ key: String, fanOut: String, renamed: Bool = false) throws(BlobStoreError) {
        if !renamed && isKnownDurable(key) { return }
        try POSIX.fsyncDirectory(fanOut)
        guard let packed = PackedKey(key) else { return }
        durableEntries.withLock { entries in
            if entries.count >= Self.maxDurableEntries { entries.removeAll() }
            entries.insert(packed)
        }
    }

    // MARK: - Paths

    /// `directory/ab/abcdef…`, or nil for an invalid key.
    func path(for key: String) -> String? {
        guard Self.isValidKey(key) else { return nil }
        return directory + "/" + key.prefix(2) + "/" + key
    }

    func validPath(for key: String) throws(BlobStoreError) -> String {
        guard let path = path(for: key) else { throw .invalidKey(key) }
        return path
    }

    /// A key is 32 lowercase hex characters: an md5 digest.
    static func isValidKey(_ key: String) -> Bool {
        key.utf8.count == 32 && isHex(key)
    }

    private static func isHex(_ text: String) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// A blob key (32 lowercase hex characters) as its 16 bytes: what the store remembers keys by.
struct PackedKey: Hashable {
    let high: UInt64
    let low: UInt64

    /// nil unless `key` is 32 lowercase hex characters.
    init?(_ key: String) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var count = 0
        for byte in key.utf8 {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            default: return nil
            }
            if count < 16 { high = high << 4 | digit } else if count < 32 { low = low << 4 | digit } else { return nil }
            count += 1
        }
        guard count == 32 else { return nil }
        self.high = high
        self.low = low
    }
}
