import CouchCrypto
import CouchWire
import Foundation
import Synchronization

/// Keeps each database's `_security` object in `<data-dir>/security/<hex of name>.json`, written
/// atomically; hex so that any database name, `/` and `..` included, is one harmless file name.
///
/// A database without a file has the default object: admin-only (CouchDB 3), except `_users`,
/// whose per-document rules (`App+Users.swift`) let people sign up and read their own document.
final class SecurityStore: Sendable {
    private let directory: String
    private let cache = Mutex<[String: SecurityObject]>([:])

    init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func security(of database: String) -> SecurityObject {
        if let cached = cache.withLock({ $0[database] }) { return cached }
        var object = SecurityStore.defaultObject(for: database)
        if let data = FileManager.default.contents(atPath: path(of: database)),
            let json = try? JSON.parse(Array(data)), let stored = try? SecurityObject(json)
        {
            object = stored
        }
        cache.withLock { $0[database] = object }
        return object
    }

    func setSecurity(_ object: SecurityObject, of database: String) throws {
        try Data(JSON.object(object.json).serialized()).write(to: URL(fileURLWithPath: path(of: database)), options: .atomic)
        cache.withLock { $0[database] = object }
    }

    /// Forgets a database's object (it was deleted or created afresh).
    func reset(_ database: String) {
        try? FileManager.default.removeItem(atPath: path(of: database))
        cache.withLock { _ = $0.removeValue(forKey: database) }
    }

    static func defaultObject(for database: String) -> SecurityObject {
        database == App.usersDatabase ? .open : .adminOnly
    }

    /// Longest name, in bytes, whose hex is used as is; longer names (up to 238 bytes) would
    /// pass the 255-byte file name limit, so they are named by their SHA-256 instead.
    private static let hexNameBytes = 100

    private func path(of database: String) -> String {
        let bytes = Array(database.utf8)
        let file = bytes.count <= SecurityStore.hexNameBytes ? bytes.hexString : "sha256-" + Digest.hash(.sha256, bytes).hexString
        return directory + "/" + file + ".json"
    }
}
