import CouchStore
import CouchWire

extension App {
    /// Who can log in to an app.
    package enum Accounts: Sendable {
        /// The configured server admins (`--admin`, `admins.json`, one generated on first start) and `_users`.
        case configured
        /// Nobody, and no admin is written anywhere: the app of `couchlite replicate` and `push`, reached only
        /// in-process (`LocalApp`).
        case none
    }

    /// Builds the app over `options.dataDir`: the store, the blobs, the accounts and every handler group. The one
    /// way an app is made, for the server (`ServerProcess`), `receive`, `replicate` and `push` (`LocalApp`) and the
    /// tests.
    /// - Parameters:
    ///   - dataDirLock: The data dir's lock, held for the app's life (nil for tests over their own temporary dirs).
    ///   - product: The handler groups a product adds to CouchDB's (the photo gallery).
    /// - Returns: The app, and the server admin created on this start because none was configured.
    package static func open(
        options: Options, log: Logger, accounts: Accounts = .configured, dataDirLock: DataDirLock? = nil,
        product: (AppServices) -> [any RouteCollection] = { _ in [] }
    ) throws -> (app: App, generatedAdmin: ServerAdmins.Generated?) {
        let dataDir = options.dataDir
        try DataDirectory.create(dataDir)
        let blobRegistry = BlobRegistry(root: dataDir + "/attachments")
        let store = try Store(
            directory: dataDir + "/databases", maxOpenDatabases: options.maxDatabasesOpen,
            alwaysOpen: App.systemDatabases, attachmentHashDigest: CouchDBAttachmentDigest(blobs: blobRegistry).hook)
        let uuid = try DataDirectory.serverUUID(dataDir)
        let access: AccessControl
        let generated: ServerAdmins.Generated?
        switch accounts {
        case .configured:
            (access, generated) = try AccessControl.setUp(options: options, store: store)
        case .none:
            // No admins, and nowhere they could be saved: nothing can log in to this app.
            access = AccessControl(
                authenticator: Authenticator(
                    admins: ServerAdmins(hashes: [:], path: "/dev/null"),
                    secret: try Authenticator.loadSecret(dataDir: dataDir), store: store),
                security: try SecurityStore(directory: dataDir + "/security"),
                cors: CORSPolicy(origins: [], credentials: options.corsCredentials))
            generated = nil
        }
        let app = App(
            store: store, blobRegistry: blobRegistry, serverUUID: uuid, options: options, access: access, log: log,
            dataDirLock: dataDirLock, product: product)
        return (app, generated)
    }
}
