import CouchStore
import CouchWire
import Foundation
import Synchronization

/// The open view indexes of every database, one per (database, signature), and the engine that maps for them.
/// Files live under `<data-dir>/views/<safe db name>/<signature>.view`; a design document whose views did not
/// change (same signature) keeps its index, and two design documents with identical views share one.
final class ViewIndexes: Sendable {
    let directory: String
    private let open = Mutex<[String: ViewIndex]>([:])
    private let installed: Mutex<any ViewEngine>

    init(directory: String, engine: any ViewEngine = UnavailableViewEngine()) {
        self.directory = directory
        installed = Mutex(engine)
    }

    /// The engine running map and JavaScript reduce functions.
    var engine: any ViewEngine { installed.withLock { $0 } }

    /// The engine that maps for `group`: Mango's native one for `"language":"query"` design documents.
    func engine(for group: ViewGroup) -> any ViewEngine {
        group.language == "query" ? MangoViewEngine() : engine
    }

    /// Installs the engine (the server at start; tests install a fake).
    func use(_ engine: any ViewEngine) { installed.withLock { $0 = engine } }

    func databaseDirectory(_ name: String) -> String { directory + "/" + SafeFileName.of(name) }

    /// The index of `group` in `database`, opened (or created) on first use.
    func index(_ database: Database, _ group: ViewGroup) throws -> ViewIndex {
        let key = database.name + "\u{0}" + group.signature
        return try open.withLock { open in
            if let index = open[key], index.owner == database.uuid { return index }
            open[key]?.file.close()
            let path = databaseDirectory(database.name) + "/" + group.signature + ".view"
            let index = ViewIndex(
                file: try ViewIndexFile(path: path, owner: database.uuid), owner: database.uuid, group: group)
            open[key] = index
            return index
        }
    }

    /// `_view_cleanup`: closes and deletes every index of `database` whose signature is not in `keep`.
    func cleanup(_ database: Database, keep: Set<String>) {
        let folder = databaseDirectory(database.name)
        open.withLock { open in
            for (key, index) in open where key.hasPrefix(database.name + "\u{0}") {
                guard !keep.contains(index.group.signature) else { continue }
                index.file.close()
                open[key] = nil
            }
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for file in files {
            let signature = file.split(separator: ".", maxSplits: 1).first.map(String.init) ?? file
            guard !keep.contains(signature) else { continue }
            try? FileManager.default.removeItem(atPath: folder + "/" + file)
        }
    }

    /// Closes and deletes every index of a database that was deleted.
    func drop(_ name: String) {
        open.withLock { open in
            for (key, index) in open where key.hasPrefix(name + "\u{0}") {
                index.file.close()
                open[key] = nil
            }
        }
        try? FileManager.default.removeItem(atPath: databaseDirectory(name))
    }
}

/// One open index and its updater. Updates are serialized: a query that finds the index behind waits for the
/// update already running (and then usually finds nothing left to do) instead of mapping the same documents
/// again, which is CouchDB's "waiting clients share one updater".
final class ViewIndex: Sendable {
    let file: ViewIndexFile
    let owner: String
    let group: ViewGroup
    private let updater = NSLock()
    private let counters = Mutex<(waiting: Int, running: Bool)>((0, false))

    /// Documents mapped per engine call and committed per transaction.
    static let batchSize = 500

    init(file: ViewIndexFile, owner: String, group: ViewGroup) {
        self.file = file
        self.owner = owner
        self.group = group
    }

    var waitingClients: Int { counters.withLock { $0.waiting } }
    var updaterRunning: Bool { counters.withLock { $0.running } }

    /// Brings the index up to at least `target` (the database's seq when the query arrived).
    func update(_ database: Database, engine: any ViewEngine, to target: Int) throws {
        guard file.updateSeq < target || !file.chunksValid else { return }
        counters.withLock { $0.waiting += 1 }
        updater.lock()
        counters.withLock {
            $0.waiting -= 1
            $0.running = true
        }
        defer {
            counters.withLock { $0.running = false }
            updater.unlock()
        }
        guard file.updateSeq < target || !file.chunksValid else { return }
        try forgetPurged(database, engine: engine)
        // From sequence 0, a document read at a seq up to the database's seq at the start has no rows yet (any later
        // update moves it past that seq), so its removal query is skipped: a first build only inserts.
        let fresh = file.updateSeq == 0 ? database.updateSeq : 0
        // Chunks are kept up to date batch by batch when they are valid; a build from scratch leaves them and
        // refolds them all in one pass at the end (every batch of a first build lands all over the key space).
        let chunks = ViewChunkReductions(group: group, engine: engine)
        let maintain = fresh == 0 && file.chunksValid
        try mapAndWrite(database, engine: engine, fresh: fresh, chunks: maintain ? chunks : nil)
        if !file.chunksValid { try file.rebuildChunks(chunks) }
    }

    /// Drops the rows of documents purged since the index's purge seq (CouchDB's updater does the same from the
    /// database's purge infos), or empties the index when the purge log no longer reaches back that far. A purge
    /// moves `update_seq` on, so the guard above lets every purge reach here.
    private func forgetPurged(_ database: Database, engine: any ViewEngine) throws {
        guard let purged = try database.purgedDocuments(since: file.purgeSeq) else {
            return try file.reset(purgeSeq: database.info().purgeSeq)
        }
        guard purged.purgeSeq > file.purgeSeq else { return }
        let chunks = file.chunksValid ? ViewChunkReductions(group: group, engine: engine) : nil
        try file.forget(purged.ids, purgeSeq: purged.purgeSeq, chunks: chunks)
    }

    /// The document a map function sees (`couch_index_updater`: the winner with `_conflicts` and
    /// `_deleted_conflicts`, `_local_seq` with `options.local_seq`), or nil when it is not mapped (deleted, or a
    /// design document without `options.include_design`).
    static func mapDocument(_ change: Database.WinnerChange, _ group: ViewGroup) throws -> JSON? {
        guard !change.change.deleted, let winner = change.winner else { return nil }
        if change.change.id.hasBytePrefix("_design/") && !group.includeDesign { return nil }
        var options = RenderOptions()
        options.conflicts = true
        options.deletedConflicts = true
        options.localSeq = group.localSeq
        let renderer = DocumentRenderer(id: change.change.id, info: change.info, options: options, inline: nil)
        return .object(try renderer.render(winner))
    }
}
