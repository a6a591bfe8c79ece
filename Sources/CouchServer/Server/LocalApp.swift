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
        var options = Options()
        options.dataDir = dataDir
        return try App.open(options: options, log: log, accounts: .none, dataDirLock: lock).app
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
