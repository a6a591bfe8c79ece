import CouchStore
import CouchWire
import Foundation

/// The app over a data dir without a listening socket: what `couchlite replicate` and `couchlite push`
/// use to reach local databases (in-process, through `App.localServer`). Nobody can log in to it, so no
/// admin is set up and nothing is written to `admins.json`.
package enum LocalApp {
    /// - Throws: `DataDirLock.Held` when another process uses the data dir (nothing is written there then).
    package static func open(dataDir: String, log: Logger) throws -> App {
        let lock = try DataDirLock.acquire(dataDir: dataDir)
        try DataDirectory.create(dataDir)
        let blobRegistry = BlobRegistry(root: dataDir + "/attachments")
        let store = try Store(
            directory: dataDir + "/databases", alwaysOpen: App.systemDatabases,
            attachmentHashDigest: CouchDBAttachmentDigest(blobs: blobRegistry).hook)
        let uuid = try DataDirectory.serverUUID(dataDir)
        var options = Options()
        options.dataDir = dataDir
        // No admins, and nowhere they could be saved: nothing can log in to this app.
        let access = AccessControl(
            authenticator: Authenticator(
                admins: ServerAdmins(hashes: [:], path: "/dev/null"),
                secret: try Authenticator.loadSecret(dataDir: dataDir), store: store),
            security: try SecurityStore(directory: dataDir + "/security"),
            cors: CORSPolicy(origins: [], credentials: options.corsCredentials))
        return App(
            store: store, blobRegistry: blobRegistry, serverUUID: uuid,
            options: options, access: access, log: log, dataDirLock: lock)
    }

    /// Closes what `open` opened.
    package static func close(_ app: App) {
        app.replications.cancelAll()
        app.localServer.shutdown(timeout: .seconds(5))
        app.store.close()
        app.databaseUpdates.log.close()
        app.dataDirLock?.release()
    }
}
