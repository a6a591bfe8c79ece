import CouchCrypto
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A directory whose contents are removed in the background.
///
/// Deleting a database whose attachments are thousands of files unlinks every one of them; on a disk mounted
/// with `discard` that is tens of files a second, and a `DELETE /db` waiting for it outlives any client's
/// timeout. So the database's blob directory is renamed in here (one step, on the same file system: the name is
/// free at once, and a database created again under it starts empty) and emptied by one background queue.
/// Whatever a stopped process left in here is removed when the next one opens it.
public final class Trash: Sendable {
    /// The trash directory itself.
    public let directory: String
    private let queue = DispatchQueue(label: "couchlite.trash", qos: .background)
    /// Entries moved in and not yet removed (the ones found at `init` included).
    private let pending = Mutex(0)

    /// Opens (creating it and its parents if needed) the trash and starts removing what it holds.
    /// - Throws: ``BlobStoreError/io(operation:path:errno:)`` if the directory cannot be made or listed.
    public init(directory: String) throws {
        self.directory = directory
        try POSIX.makeDirectories(directory)
        for name in try POSIX.list(directory) { removeLater(name) }
    }

    /// Moves `path` (a file or a whole directory tree) into the trash, to be removed in the background.
    /// - Returns: false when it cannot be renamed in (another file system, no such path): the caller removes it
    ///   itself.
    public func take(_ path: String) -> Bool {
        let name = Secrets.randomBytes(12).hexString
        guard rename(path, directory + "/" + name) == 0 else { return false }
        removeLater(name)
        return true
    }

    /// How many entries are still to be removed.
    public var pendingCount: Int { pending.withLock { $0 } }

    /// Waits until everything moved in so far is removed (for tests and an orderly shutdown).
    public func drain() {
        queue.sync {}
    }

    private func removeLater(_ name: String) {
        pending.withLock { $0 += 1 }
        queue.async { [self] in
            // An entry that cannot be removed now (an I/O error) stays, and the next process retries it.
            try? POSIX.removeTree(directory + "/" + name)
            pending.withLock { $0 -= 1 }
        }
    }
}
