import CouchCrypto
import CouchWire
import Foundation
import Synchronization

/// Keeps each database's `_security` object in `<data-dir>/security/<safe name>.json`, written
/// atomically; hex so that any database name, `/` and `..` included, is one harmless file name.
///
/// A database without a file has the default object: admin-only, `_users` included (CouchDB 3's
/// `default_security = admin_only`: nobody signs up unless an admin opens `_users`, see
/// `Options.usersDBSecurityEditable`). Within an opened `_users`, the per-document rules of
/// `App+Users.swift` let people sign up and read only their own document.
package final class SecurityStore: Sendable {
    private let directory: String
    private let cache = Mutex<[String: SecurityObject]>([:])

    init(directory: String) throws {
        self.directory = directory
        try PrivateFile.createDirectory(directory)
    }

    package func security(of database: String) -> SecurityObject {
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
        try PrivateFile.write(JSON.object(object.json).serialized(), to: path(of: database))
        cache.withLock { $0[database] = object }
    }

    /// Forgets a database's object (it was deleted or created afresh).
    package func reset(_ database: String) {
        try? FileManager.default.removeItem(atPath: path(of: database))
        cache.withLock { _ = $0.removeValue(forKey: database) }
    }

    static func defaultObject(for database: String) -> SecurityObject {
        .adminOnly
    }

    private func path(of database: String) -> String {
        directory + "/" + SafeFileName.of(database) + ".json"
    }
}
