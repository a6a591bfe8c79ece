#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a blob store operation failed.
public enum BlobStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A system call failed.
    case io(operation: String, path: String, errno: Int32)
    /// The key is not 32 lowercase hex characters (it could otherwise name a path outside the store).
    case invalidKey(String)
    /// No blob has this key.
    case notFound(key: String)
    /// A read asked for a negative offset or count.
    case invalidRange(offset: Int, count: Int)
    /// The writer or reader was already committed, aborted or closed.
    case closed
    /// A hash-only writer's bytes were not the blob it expected (their md5 is `actual`).
    case digestMismatch(expected: String, actual: String)

    public var description: String {
        switch self {
        case .io(let operation, let path, let code):
            "\(operation) \(path): \(String(cString: strerror(code))) (errno \(code))"
        case .invalidKey(let key): "invalid blob key \(key.debugDescription)"
        case .notFound(let key): "no blob \(key)"
        case .invalidRange(let offset, let count): "invalid blob range offset \(offset) count \(count)"
        case .closed: "blob handle already closed"
        case .digestMismatch(let expected, let actual): "blob bytes have md5 \(actual), expected \(expected)"
        }
    }
}
