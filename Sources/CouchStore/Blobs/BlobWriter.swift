import CouchCrypto

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An upload in progress: streams bytes to a temp file while hashing them with md5 (the key and
/// CouchDB's digest) and, when asked, sha1 (Couchbase Lite's digest).
///
/// A writer made for bytes whose key is already stored (``BlobStore/makeWriter(sha1:expecting:)``)
/// only hashes: nothing is written, and `commit` checks that the bytes were the stored ones.
///
/// Nothing is buffered beyond what the caller passes to one `write`. If a `write` throws (disk
/// full), abort the writer. Not thread-safe: one writer belongs to one upload.
public final class BlobWriter {
    private enum State { case open, committed, aborted }

    /// Where the bytes go.
    private enum Sink {
        /// A temp file, renamed to its key on commit.
        case tempFile(path: String)
        /// Nowhere: they are expected to be this stored blob's, which `commit` checks.
        case verifying(expectedKey: String)
    }

    private let store: BlobStore
    private let sink: Sink
    private var fd: Int32
    private let md5 = Digest(.md5)
    private let sha1: Digest?
    private var state = State.open

    /// Bytes written so far.
    public private(set) var length = 0

    /// Whether this writer only hashes, because its bytes are expected to be a stored blob's.
    public var isVerifyingOnly: Bool {
        if case .verifying = sink { return true }
        return false
    }

    init(store: BlobStore, tempPath: String, fd: Int32, sha1: Bool) {
        self.store = store
        self.sink = .tempFile(path: tempPath)
        self.fd = fd
        self.sha1 = sha1 ? Digest(.sha1) : nil
    }

    init(store: BlobStore, verifying key: String, sha1: Bool) {
        self.store = store
        self.sink = .verifying(expectedKey: key)
        self.fd = -1
        self.sha1 = sha1 ? Digest(.sha1) : nil
    }

    deinit { abort() }

    /// Appends bytes.
    /// - Throws: `.closed` after commit or abort; `.io` if the disk refuses.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard state == .open else { throw BlobStoreError.closed }
        if case .tempFile(let tempPath) = sink {
            try POSIX.writeAll(fd, bytes, path: tempPath)
            POSIX.startWriteback(fd, offset: length, count: bytes.count)
        }
        md5.update(bytes)
        sha1?.update(bytes)
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
    /// directory so the rename survives a crash. A hash-only writer checks the md5 against the key it
    /// expected and refreshes that blob.
    /// - Returns: The key, raw md5 digest, raw sha1 digest (nil unless asked for), and length.
    /// - Throws: `.closed`, `.io` (the temp file is then removed); for a hash-only writer,
    ///   `.digestMismatch` when the bytes were not the expected blob's, and `.notFound` if that blob was
    ///   removed meanwhile (its time was refreshed when the writer was made, so only a compaction more than
    ///   its grace window after that can remove it).
    public func commit() throws -> (key: String, md5: [UInt8], sha1: [UInt8]?, length: Int) {
        guard state == .open else { throw BlobStoreError.closed }
        do {
            let md5Bytes = md5.finalize()
            let sha1Bytes = sha1?.finalize()
            let key = md5Bytes.hexString
            let path = try store.validPath(for: key)
            let fanOut = store.directory + "/" + key.prefix(2)
            let tempPath: String
            switch sink {
            case .tempFile(let path): tempPath = path
            case .verifying(let expectedKey):
                guard key == expectedKey else {
                    throw BlobStoreError.digestMismatch(expected: expectedKey, actual: key)
                }
                // Refresh the time so a concurrent compaction's grace window covers this reuse.
                guard utimensat(AT_FDCWD, path, nil, 0) == 0 else { throw BlobStoreError.notFound(key: key) }
                // The directory is synced as on any dedupe (the first committer of these bytes may have renamed
                // them in without having finished its own directory sync yet), unless that is known done.
                try store.syncEntry(key, fanOut: fanOut)
                state = .committed
                return (key, md5Bytes, sha1Bytes, length)
            }
            if try POSIX.makeDirectory(fanOut) { try POSIX.fsyncDirectory(store.directory) }
            if access(path, F_OK) == 0 {
                // Already stored: the copy's bytes need no sync. The directory is synced still, in case the
                // first committer of these bytes renamed them in but has not finished its own directory sync,
                // unless that is known done.
                close(fd)
                fd = -1
                unlink(tempPath)
                // Refresh the time so a concurrent compaction's grace window covers this reuse.
                utimensat(AT_FDCWD, path, nil, 0)
                try store.syncEntry(key, fanOut: fanOut)
            } else {
                try POSIX.fdatasync(fd, path: tempPath)
                close(fd)
                fd = -1
                guard rename(tempPath, path) == 0 else {
                    throw BlobStoreError.io(operation: "rename", path: path, errno: errno)
                }
                try store.syncEntry(key, fanOut: fanOut, renamed: true)
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
        if case .tempFile(let tempPath) = sink { unlink(tempPath) }
    }
}
