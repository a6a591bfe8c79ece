import CouchCrypto
import CouchStore
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One content-addressed blob store per database, under `<data-dir>/attachments/<safe name>` (`SafeFileName`)
/// (hex so that any legal database name, `/` included, is one safe directory name), and the gate
/// that keeps compaction's blob sweep away from uploads being committed.
package final class BlobRegistry: Sendable {
    private let root: String
    private let stores = Mutex<[String: BlobStore]>([:])
    /// `<root>/.trash`: a deleted database's blob directory is moved here and removed in the background (nil when
    /// it cannot be made: deletes then remove the files before they answer).
    let trash: Trash?
    /// Commits take it shared, the sweep exclusively: a sweep can never judge a blob unreferenced
    /// between an upload's rename and the refresh of its time.
    let sweepGate = ReadWriteLock()

    /// How long a blob written or re-committed stays safe from the sweep even when no revision
    /// references it yet, in seconds, counted back from the start of compaction: it covers the
    /// time between an upload's commit and the write of its revision (a `_bulk_docs` body of
    /// many inline attachments, a multipart body whose later parts are still arriving — those
    /// refresh their earlier parts when the body ends).
    static let sweepGraceSeconds = 600

    /// Opens every existing database's store at once, so the temp files a crash left behind are
    /// removed at startup rather than when the database is next used.
    init(root: String) {
        self.root = root
        trash = try? Trash(directory: root + "/" + BlobRegistry.trashName)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        stores.withLock { stores in
            for directoryName in names {
                guard let name = BlobRegistry.databaseName(hex: directoryName),
                    let store = try? BlobStore(directory: root + "/" + directoryName)
                else { continue }
                stores[name] = store
            }
        }
    }

    /// The database name a store directory is named after, or nil if it is not one of ours.
    private static func databaseName(hex: String) -> String? {
        let digits = Array(hex.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    package func store(for name: String) throws -> BlobStore {
        try stores.withLock { stores in
            if let existing = stores[name] { return existing }
            let store = try BlobStore(directory: directory(for: name))
            stores[name] = store
            return store
        }
    }

    /// The trash's directory name under the root: not hex, so never taken for a database's store.
    static let trashName = ".trash"

    /// Removes a deleted database's blobs: their directory is gone when this returns, the files go in the
    /// background (see `Trash`).
    func destroy(_ name: String) throws {
        let store = try stores.withLock { stores in
            try stores.removeValue(forKey: name) ?? BlobStore(directory: directory(for: name))
        }
        try store.destroy(via: trash)
    }

    private func directory(for name: String) -> String {
        root + "/" + SafeFileName.of(name)
    }
}

/// A POSIX reader-writer lock.
///
/// `@unchecked Sendable`: the only state is the heap-allocated `pthread_rwlock_t`, which is made
/// for concurrent use from any thread and never moves.
final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    func shared<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}

extension BlobRegistry {
    /// The blob store of `database`.
    package func store(for database: Database) throws -> BlobStore {
        try store(for: database.name)
    }

    /// Starts an upload (see ``BlobStore/makeWriter(sha1:expecting:)``); a hash-only writer refreshes its
    /// blob's time, so this is never concurrent with a blob sweep either.
    package func makeWriter(_ database: Database, sha1: Bool = false, expecting key: String? = nil) throws -> BlobWriter
    {
        let store = try store(for: database)
        return try sweepGate.shared { try store.makeWriter(sha1: sha1, expecting: key) }
    }

    /// Commits an upload; never concurrent with a blob sweep (see ``BlobRegistry/sweepGate``).
    package func commit(_ writer: BlobWriter) throws -> (key: String, md5: [UInt8], sha1: [UInt8]?, length: Int) {
        try sweepGate.shared { try writer.commit() }
    }

    /// Refreshes the time of blobs committed a while ago whose revision is about to be written
    /// (the parts of a long multipart body), so the sweep's grace window covers them again.
    func refresh(_ keys: [String], in database: Database) throws {
        let store = try store(for: database)
        sweepGate.shared {
            for key in keys {
                // BlobStore's layout: `directory/ab/abcdef…`.
                let path = store.directory + "/" + key.prefix(2) + "/" + key
                utimensat(AT_FDCWD, path, nil, 0)
            }
        }
    }
}
