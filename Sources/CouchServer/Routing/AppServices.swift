import CouchStore

/// The services of an app that a product's handlers may use (the photo gallery's): what `App` hands the routes a
/// product adds to its table.
package struct AppServices: Sendable {
    package let store: Store
    package let security: SecurityStore
    package let documents: DocumentWriter
    package let blobs: BlobRegistry
    package let options: Options
    package let log: Logger
    /// The server's id (the welcome of `GET /`).
    package let serverUUID: String
    /// Which `Origin`s are this server's, for the cross-site checks of writes from pages.
    package let hosts: HostPolicy
    /// `couchlite receive`'s one-time drop accounts (the drop page's sign-in by token makes their cookies).
    package let dropAccounts: TemporaryAccounts
}
