import CouchStore
import CouchWire
import Foundation
import Synchronization

/// Everything the server needs to decide who may do what: authentication, each database's
/// `_security` object and the CORS rules. One per server, shared by all connection threads.
package final class AccessControl: Sendable {
    package let authenticator: Authenticator
    package let security: SecurityStore
    /// The CORS rules now (`_config` changes them live); `initialCORS` is what the command line set.
    var cors: CORSPolicy {
        get { liveCORS.withLock { $0 } }
        set { liveCORS.withLock { $0 = newValue } }
    }
    let initialCORS: CORSPolicy
    private let liveCORS: Mutex<CORSPolicy>

    init(authenticator: Authenticator, security: SecurityStore, cors: CORSPolicy) {
        self.authenticator = authenticator
        self.security = security
        initialCORS = cors
        liveCORS = Mutex(cors)
    }

    /// Sets up access control for a data directory: admins (generating one on a first start
    /// without `--admin`), the cookie secret, the security objects and the `_users` database.
    /// - Returns: the generated admin, if one was made, for `main` to print once.
    static func setUp(options: Options, store: Store) throws -> (AccessControl, ServerAdmins.Generated?) {
        let (admins, generated) = try ServerAdmins.setUp(
            credentials: options.admin, dataDir: options.dataDir, iterations: options.pbkdf2Iterations)
        let secret = try Authenticator.loadSecret(dataDir: options.dataDir)
        let security = try SecurityStore(directory: options.dataDir + "/security")
        if (try? store.open(App.usersDatabase)) == nil {
            _ = try store.create(App.usersDatabase)
            security.reset(App.usersDatabase)
        }
        let access = AccessControl(
            authenticator: Authenticator(
                admins: admins, secret: secret, store: store, iterations: options.pbkdf2Iterations),
            security: security,
            cors: CORSPolicy(origins: options.corsOrigins, credentials: options.corsCredentials))
        return (access, generated)
    }
}
