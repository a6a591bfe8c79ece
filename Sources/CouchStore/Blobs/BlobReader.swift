#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads one stored blob, sequentially or at any offset, in chunks (for streaming responses and
/// `Range` requests). Holds an open file descriptor, so it keeps working if the blob is removed.
///
/// Not thread-safe: one reader belongs to one response.
public final class BlobReader {
    private var fd: Int32
    private let path: String

    /// The blob's size in bytes.
    public let length: Int

    init(fd: Int32, length: Int, path: String) {
        self.fd = fd
        self.length = length
        self.path = path
    }

    deinit { close() }

    /// Reads up to `count` bytes starting at `offset`.
    ///
    /// Read in bounded chunks (64 KiB to 1 MiB): the result is allocated whole.
    /// - Returns: The bytes; fewer than `count` only at the end of the blob, empty at or past it.
    /// - Throws: `.invalidRange` for a negative offset or count, `.closed`, or `.io`.
    public func read(at offset: Int, upTo count: Int) throws -> [UInt8] {
        guard offset >= 0, count >= 0 else { throw BlobStoreError.invalidRange(offset: offset, count: count) }
        guard fd >= 0 else { throw BlobStoreError.closed }
        let wanted = max(0, min(count, length - offset))
        guard wanted > 0 else { return [] }
        var failure: BlobStoreError?
        let bytes = [UInt8](unsafeUninitializedCapacity: wanted) { buffer, initialized in
            var done = 0
            while done < wanted {
                let got = pread(fd, buffer.baseAddress.map { $0 + done }, wanted - done, off_t(offset + done))
                if got < 0 {
                    if errno == EINTR { continue }
                    failure = .io(operation: "pread", path: path, errno: errno)
                    break
                }
                if got == 0 { break }  // the file is shorter than when opened: stop at its end
                done += got
            }
            initialized = done
        }
        if let failure { throw failure }
        return bytes
    }

    /// Closes the file. Safe to call more than once; done by `deinit`.
    public func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }
}
