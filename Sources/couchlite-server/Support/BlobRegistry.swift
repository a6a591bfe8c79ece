import CouchCrypto
import Foundation
import RevTree
import Synchronization

/// One content-addressed blob store per database, under `<data-dir>/attachments/<hex of name>`
/// (hex so that any legal database name, `/` included, is one safe directory name).
final class BlobRegistry: Sendable {
    private let root: String
    private let stores = Mutex<[String: BlobStore]>([:])

    init(root: String) {
        self.root = root
    }

    func store(for name: String) throws -> BlobStore {
        try stores.withLock { stores in
            if let existing = stores[name] { return existing }
            let store = try BlobStore(directory: directory(for: name))
            stores[name] = store
            return store
        }
    }

    /// Removes a deleted database's blobs.
    func destroy(_ name: String) throws {
        let store = try stores.withLock { stores in
            try stores.removeValue(forKey: name) ?? BlobStore(directory: directory(for: name))
        }
        try store.destroy()
    }

    private func directory(for name: String) -> String {
        root + "/" + Array(name.utf8).hexString
    }
}

extension App {
    func blobs(for database: Database) throws -> BlobStore {
        try blobRegistry.store(for: database.name)
    }
}
