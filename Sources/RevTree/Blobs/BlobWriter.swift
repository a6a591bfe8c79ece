import CouchCrypto

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An upload in progress: streams bytes to a temp file while hashing them with md5 (the key and
/// CouchDB's digest) and sha1 (Couchbase Lite's digest).
///
/// Nothing is buffered beyond what the caller passes to one `write`. If a `write` throws (disk
/// full), abort the writer. Not thread-safe: one writer belongs to one upload.
public final class BlobWriter {
    private enum State { case open, committed, aborted }

    private let store: BlobStore
    private let tempPath: String
    private var fd: Int32
    private let md5 = Digest(.md5)
    private let sha1 = Digest(.sha1)
    private var state = State.open

    /// Bytes written so far.
    public private(set) var length = 0

    init(store: BlobStore, tempPath: String, fd: Int32) {
        self.store = store
        self.tempPath = tempPath
        self.fd = fd
    }

    deinit { abort() }

    /// Appends bytes.
    /// - Throws: `.closed` after commit or abort; `.io` if the disk refuses.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard state == .open else { throw BlobStoreError.closed }
        try POSIX.writeAll(fd, bytes, path: tempPath)
        md5.update(bytes)
        sha1.update(bytes)
        length += bytes.count
    }

    /// Appends bytes.
    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Makes the blob durable and visible under its key.
    ///
    /// If the key already exists, drops the temp file and refreshes the existing file's time (dedupe);
    /// otherwise syncs the temp file's data, renames it to `directory/ab/<md5 hex>`, and fsyncs the
    /// directory so the rename survives a crash.
    /// - Returns: The key, raw md5 and sha1 digests, and length.
    /// - Throws: `.closed`, or `.io`; the temp file is then removed.
    public func commit() throws -> (key: String, md5: [UInt8], sha1: [UInt8], length: Int) {
        guard state == .open else { throw BlobStoreError.closed }
        do {
            let md5Bytes = md5.finalize()
            let sha1Bytes = sha1.finalize()
            let key = md5Bytes.hexString
            let path = try store.validPath(for: key)
            let fanOut = store.directory + "/" + key.prefix(2)
            if try POSIX.makeDirectory(fanOut) { try POSIX.fsyncDirectory(store.directory) }
            if access(path, F_OK) == 0 {
                // Already stored: the copy's bytes need no sync. The directory is synced still, in case the
                // first committer of these bytes renamed them in but has not finished its own directory sync.
                close(fd)
                fd = -1
                unlink(tempPath)
                // Refresh the time so a concurrent compaction's grace window covers this reuse.
                utimensat(AT_FDCWD, path, nil, 0)
                try POSIX.fsyncDirectory(fanOut)
            } else {
                try POSIX.fdatasync(fd, path: tempPath)
                close(fd)
                fd = -1
                guard rename(tempPath, path) == 0 else {
                    throw BlobStoreError.io(operation: "rename", path: path, errno: errno)
                }
                try POSIX.fsyncDirectory(fanOut)
            }
            state = .committed
            return (key, md5Bytes, sha1Bytes, length)
        } catch {
            abort()
            throw error
        }
    }

    /// Discards the upload and its temp file. Safe to call more than once; done by `deinit` if
    /// neither `commit` nor `abort` ran.
    public func abort() {
        guard state == .open else { return }
        state = .aborted
        if fd >= 0 {
            close(fd)
            fd = -1
        }
        unlink(tempPath)
    }
}
