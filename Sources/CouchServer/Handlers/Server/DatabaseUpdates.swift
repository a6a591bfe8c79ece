import CouchStore

/// `_db_updates`' events (``DatabaseUpdateLog``, in `db_updates.sqlite` of the data dir) as the server follows
/// its store, and their sequences' wire form.
final class DatabaseUpdates: Sendable {
    typealias Event = DatabaseUpdateLog.Event

    let log: DatabaseUpdateLog
    let seqs: DatabaseUpdateSeq

    init(log: DatabaseUpdateLog) {
        self.log = log
        seqs = DatabaseUpdateSeq(epoch: log.epoch)
    }

    /// The name of the log's file in the data dir.
    static let fileName = "db_updates.sqlite"

    /// Opens the log of `dataDir` (the databases of `store` each `created` when it is new) and follows the store's
    /// events from now on. A log that cannot be opened (a damaged file) is left untouched and the feed is
    /// kept in memory until the next start: the server still serves its databases.
    convenience init(following store: Store, dataDir: String, log logger: Logger) {
        let path = dataDir + "/" + Self.fileName
        let seed = { store.databaseNames() }
        let log: DatabaseUpdateLog
        do {
            log = try DatabaseUpdateLog(path: path, seed: seed)
        } catch {
            logger.error("_db_updates log cannot be opened; kept in memory", ["path": path, "error": "\(error)"])
            do {
                log = try DatabaseUpdateLog(path: nil, seed: seed)
            } catch {
                // At start only: SQLite could not open an empty database in memory.
                preconditionFailure("in-memory SQLite cannot be opened: \(error)")
            }
        }
        self.init(log: log)
        store.observe { [weak self] name, event in self?.log.record(name, event) }
    }

    /// Flushes, then the sequence of the latest event (`since=now`).
    var lastSeq: Int {
        try? log.flush()
        return log.lastSeq
    }
}
