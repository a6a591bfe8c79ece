import Foundation
import Testing

@testable import CouchStore

#if canImport(Glibc)
    import Glibc
#endif

/// A full disk must be recognised however the store wrapped it, so the server answers 507
/// `insufficient_storage` instead of a 500 whose reason names a temporary file.
@Suite struct StorageFailureTests {
    @Test func test_full_disk_is_recognised_not_leaked_as_a_500() {
        #expect(StorageFailure.isDiskFull(SQLiteError(code: 13, message: "database or disk is full", sql: nil)))
        // Extended result codes keep the primary code in the low byte.
        #expect(StorageFailure.isDiskFull(SQLiteError(code: 13 | (1 << 8), message: "full", sql: "INSERT")))
        #expect(StorageFailure.isDiskFull(BlobStoreError.io(operation: "write", path: "/d/tmp/x", errno: ENOSPC)))
        #expect(StorageFailure.isDiskFull(BlobStoreError.io(operation: "write", path: "/d/tmp/x", errno: EDQUOT)))
        #expect(StorageFailure.isDiskFull(StoreError.internalError("SQLite error 13: database or disk is full")))
        #expect(StorageFailure.isDiskFull(StoreError.internalError("fdatasync /d/x.couch-wal: errno \(ENOSPC)")))
        #expect(StorageFailure.isDiskFull(NSError(domain: NSPOSIXErrorDomain, code: Int(ENOSPC))))
        #expect(StorageFailure.isDiskFull(CocoaError(.fileWriteOutOfSpace)))
        let wrapped = NSError(
            domain: NSCocoaErrorDomain, code: 512,
            userInfo: [NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(ENOSPC))])
        #expect(StorageFailure.isDiskFull(wrapped))
    }

    @Test func otherFailuresAreNotDiskFull() {
        #expect(!StorageFailure.isDiskFull(SQLiteError(code: 26, message: "file is not a database", sql: nil)))
        #expect(!StorageFailure.isDiskFull(BlobStoreError.io(operation: "open", path: "/d/x", errno: ENOENT)))
        #expect(!StorageFailure.isDiskFull(StoreError.internalError("SQLite error 130: something")))
        #expect(!StorageFailure.isDiskFull(StoreError.dbNotFound))
        #expect(!StorageFailure.isDiskFull(NSError(domain: NSPOSIXErrorDomain, code: Int(EACCES))))
    }
}
