import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Classifies failures that come out of the store, so the HTTP layer can answer them without showing
/// their text (which names files and SQLite internals) to clients.
public enum StorageFailure {
    /// SQLite's primary result code for "database or disk is full".
    static let sqliteFull: Int32 = 13

    /// Whether `error` means the disk (or the user's quota) is full: ENOSPC/EDQUOT from a system call, or
    /// SQLite's `SQLITE_FULL`, however the store wrapped it.
    public static func isDiskFull(_ error: any Error) -> Bool {
        switch error {
        case let error as SQLiteError:
            return error.code & 0xFF == sqliteFull
        case BlobStoreError.io(_, _, let code):
            return code == ENOSPC || code == EDQUOT
        case StoreError.internalError(let detail):
            // The store wraps SQLite and POSIX failures in text ("SQLite error 13: …", "errno 28").
            return detail.hasPrefix("SQLite error \(sqliteFull):") || detail.contains("errno \(ENOSPC)")
                || detail.contains("errno \(EDQUOT)")
        default:
            let error = error as NSError
            if error.domain == NSPOSIXErrorDomain, error.code == Int(ENOSPC) || error.code == Int(EDQUOT) {
                return true
            }
            if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying !== error {
                return isDiskFull(underlying)
            }
            return error.domain == NSCocoaErrorDomain && error.code == CocoaError.fileWriteOutOfSpace.rawValue
        }
    }
}
