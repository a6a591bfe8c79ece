import Foundation
import Synchronization

/// A directory of databases, one SQLite file (`<encoded name>.couch`, plus `-wal`/`-shm`) each.
///
/// Each database used since the store opened keeps one ``Database`` handle here; at most `maxOpenDatabases` of
/// them hold their files and threads open while idle (see ``OpenDatabases``), the others reopen on their next use.
public final class Store: Sendable {
    /// CouchDB's `max_dbs_open` default.
    public static let defaultMaxOpenDatabases = 500
    /// The directory holding the database files.
    public let directory: String
    private let open = Mutex<[String: Database]>([:])
    private let bound: OpenDatabases
    /// How many times each database name has been deleted, so a caller can tell that a failure came from
    /// a database deleted while it worked (see ``deletions(of:)``).
    private let deleted = Mutex<[String: Int]>([:])

    /// File suffix of a database.
    static let suffix = ".couch"

    /// Uses (and creates if needed) `directory`.
    /// - Parameters:
    ///   - maxOpenDatabases: how many databases stay open while idle (at least 1).
    ///   - alwaysOpen: names never closed by that bound nor counted in it (CouchDB's system databases).
    ///   - writerCacheKiB: the page cache the open databases' writers share (``WriterCacheBudget``).
    public init(
        directory: String, maxOpenDatabases: Int = Store.defaultMaxOpenDatabases, alwaysOpen: Set<String> = [],
        writerCacheKiB: Int = WriterCacheBudget.defaultKiB, attachmentHashDigest: AttachmentHashDigest? = nil
    ) throws {
        self.directory = directory
        self.bound = OpenDatabases(
            limit: maxOpenDatabases, exempt: alwaysOpen, writerCache: WriterCacheBudget(kib: writerCacheKiB),
            attachmentHashDigest: attachmentHashDigest)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// How many databases hold their files open now, the `alwaysOpen` ones included (`open_databases` in
    /// `_node/_local/_stats`).
    public var openDatabaseCount: Int { bound.total }

    /// How many databases count against the bound now (open, not `alwaysOpen`).
    public var boundedOpenDatabaseCount: Int { bound.count }

    /// The page cache the open databases' writers share.
    var writerCacheBudget: WriterCacheBudget { bound.writerCache }

    /// What the page caches of the open databases' writers and idle readers hold (`_system`).
    public var pageCache: PageCacheGauge { bound.pageCache }

    /// The bound on idle open databases.
    public var maxOpenDatabases: Int { bound.limit }

    /// Creates a database.
    /// - Parameter prepare: Runs once the name is known to be free and before the database exists, so
    ///   that state a crashed earlier incarnation left (its attachment blobs) is cleared before any
    ///   request can see the new one.
    /// - Throws: `.fileExists` if it exists, `.internalError` if SQLite fails.
    public func create(_ name: String, prepare: () -> Void = {}) throws(StoreError) -> Database {
        let path = self.path(of: name)
        let database = try open.withLock { (open: inout [String: Database]) throws(StoreError) -> Database in
            guard open[name] == nil, !FileManager.default.fileExists(atPath: path) else { throw .fileExists }
            prepare()
            do {
                let database = try Database(name: name, path: path, create: true, registry: bound)
                open[name] = database
                return database
            } catch {
                Store.removeFiles(path)
                throw .internalError("\(error)")
            }
        }
        // A new database may push the bound over: the least recently used idle ones close.
        bound.trim()
        bound.events.notify(name, .created)
        return database
    }

    /// Opens an existing database (handles are cached and shared; one closed by the bound reopens when used).
    /// - Throws: `.dbNotFound` if there is no such database.
    public func open(_ name: String) throws(StoreError) -> Database {
        let path = self.path(of: name)
        let (database, opened) = try open.withLock {
            (open: inout [String: Database]) throws(StoreError) -> (Database, Bool) in
            if let database = open[name] { return (database, false) }
            guard FileManager.default.fileExists(atPath: path) else { throw .dbNotFound }
            do {
                let database = try Database(name: name, path: path, create: false, registry: bound)
                open[name] = database
                return (database, true)
            } catch {
                throw .internalError("\(error)")
            }
        }
        if opened { bound.trim() }
        return database
    }

    /// Deletes a database and its files; open handles stop working (`.dbNotFound`).
    public func delete(_ name: String) throws(StoreError) {
        let path = self.path(of: name)
        try open.withLock { (open: inout [String: Database]) throws(StoreError) in
            let database = open.removeValue(forKey: name)
            guard database != nil || FileManager.default.fileExists(atPath: path) else { throw .dbNotFound }
            deleted.withLock { $0[name, default: 0] += 1 }
            database?.close()
            Store.removeFiles(path)
        }
        bound.events.notify(name, .deleted)
    }

    /// Calls `observer` with every database created, written (after each commit) or deleted from now on, on the
    /// thread that did it: it must be quick. One observer per store; a later call replaces it.
    public func observe(_ observer: @escaping @Sendable (String, DatabaseEvent) -> Void) {
        bound.events.set(observer)
    }

    /// How many times `name` has been deleted since the store opened: a request that sees this change
    /// while it runs raced `DELETE /db`, whatever state the database is in now.
    public func deletions(of name: String) -> Int {
        deleted.withLock { $0[name] ?? 0 }
    }

    /// Whether a database of this name exists now (open, or on disk).
    public func exists(_ name: String) -> Bool {
        let path = self.path(of: name)
        return open.withLock { open in open[name] != nil || FileManager.default.fileExists(atPath: path) }
    }

    /// Names of all databases, sorted.
    public func databaseNames() -> [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(Store.suffix) }
            .compactMap { Store.decode(String($0.dropLast(Store.suffix.count))) }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Closes every open database (queued writes finish first).
    public func close() {
        let databases = open.withLock { open in
            defer { open.removeAll() }
            return Array(open.values)
        }
        for database in databases { database.close() }
    }

    func path(of name: String) -> String {
        directory + "/" + Store.encode(name) + Store.suffix
    }

    private static func removeFiles(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// Longest file-name form of a database name, in bytes: with `.couch` and SQLite's `-journal` it must fit in a
    /// file name of 255 bytes.
    static let maxFileNameBytes = 255 - suffix.utf8.count - "-journal".utf8.count

    /// File-name form of a database name: bytes outside `[a-z0-9_$()+-]` become `%XX` (so `/` and `.` cannot
    /// escape the directory). A legal name whose form would not fit in a file name (CouchDB allows 238 bytes, and
    /// every `/` triples) writes each `/` as `,` instead, one byte: no legal name holds a `,` (which the short form
    /// would write `%2C`), so each file still names one database, and every name that fitted keeps its file.
    static func encode(_ name: String) -> String {
        let escaped = encode(name, slash: "%2F")
        return escaped.utf8.count <= maxFileNameBytes ? escaped : encode(name, slash: ",")
    }

    private static func encode(_ name: String, slash: String) -> String {
        var out = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "+"),
                UInt8(ascii: "-"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/"):
                out += slash
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// The database name a file-name form stands for; nil for a file that is not the form of its name.
    static func decode(_ file: String) -> String? {
        var bytes = [UInt8]()
        var iterator = Array(file.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else if byte == UInt8(ascii: ",") {
                bytes.append(UInt8(ascii: "/"))
            } else {
                bytes.append(byte)
            }
        }
        guard let name = String(validating: bytes, as: UTF8.self), encode(name) == file else { return nil }
        return name
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
