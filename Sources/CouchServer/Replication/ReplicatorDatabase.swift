import CouchWire
import Foundation
import Replicator
import RevTree
import Synchronization

/// The `_replicator` database: each document there is a replication job, started when the document
/// appears (and again after a restart of the server, resuming from its checkpoint), cancelled when it
/// is deleted, restarted when it is edited. One-shot jobs record their outcome in the document
/// (`_replication_state` `completed`/`failed`, `_replication_state_time`, `_replication_stats`,
/// `_replication_state_reason`), as CouchDB 3 does; `GET /_scheduler/docs` shows every document's state.
///
/// The database is read through the app's in-process server like any local endpoint, following its
/// `_changes` with long-polls on a thread of its own.
final class ReplicatorDatabase: Sendable {
    package static let name = "_replicator"

    struct DocState: Sendable {
        var rev: String
        var state: String
        var jobID: String?
        var source: String?
        var target: String?
        var error: String?
        var errorCount = 0
        var lastUpdated = Date()
        var startTime = Date()
        var job: ReplicationJobs.Job?
    }

    private let box: AppBox
    private let endpoint: Endpoint
    private let docs = Mutex<[String: DocState]>([:])
    private let stopped = Mutex<Bool>(false)
    private let wakeup = Wakeup()

    init(app: App) {
        box = AppBox()
        box.app = app
        endpoint = app.localEndpoint(Self.name)
    }

    /// Creates the database if needed and starts following it.
    func start() {
        let thread = Thread { [self] in follow() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    func stop() {
        stopped.withLock { $0 = true }
        endpoint.client.cancel()
        wakeup.wake()
    }

    var states: [(String, DocState)] { docs.withLock { $0.sorted { $0.key < $1.key } } }

    private var isStopped: Bool { stopped.withLock { $0 } }

    /// Follows the database's `_changes`. When the database is deleted, its jobs stop (as CouchDB's
    /// `clean_up_replications` does) and the feed is asked again with a growing pause until a new
    /// `_replicator` appears, which is then read from its start: a missing database must not be asked again
    /// at once, forever.
    private func follow() {
        var since: JSON = 0
        var created = false
        var backoff = Backoff()
        // Deletions of `_replicator` the follower has seen: another one means it reads a new database.
        var deletions = box.app?.store.deletions(of: Self.name) ?? 0
        while !isStopped {
            do {
                if !created {
                    let response = try endpoint.client.send(endpoint.request("PUT", ""))
                    response.discard()
                    created = true
                }
                let now = box.app?.store.deletions(of: Self.name) ?? deletions
                if now != deletions {
                    deletions = now
                    since = 0
                    databaseDeleted()
                }
                let sinceText = since.stringValue ?? since.serializedString
                let feed = since == 0 ? "normal" : "longpoll"
                let path =
                    "/_changes?feed=\(feed)&include_docs=true&timeout=30000&since=\(PathEncoding.query(sinceText))"
                let response = try endpoint.client.send(endpoint.request("GET", path, timeout: .seconds(60)))
                guard response.status == 200 else {
                    // 404: deleted (and not created again yet); anything else: try again later too.
                    response.discard()
                    wakeup.sleep(for: backoff.next())
                    continue
                }
                let reply = try response.json()
                guard deletions == box.app?.store.deletions(of: Self.name) ?? deletions else { continue }
                for row in reply["results"]?.arrayValue ?? [] {
                    guard let id = row["id"]?.stringValue, !id.hasPrefix("_design/") else { continue }
                    if row["deleted"]?.boolValue == true {
                        removed(id)
                    } else if let doc = row["doc"]?.objectValue {
                        changed(id, doc)
                    }
                }
                if let last = reply["last_seq"], !last.isNull { since = last }
                backoff.reset()
            } catch {
                if isStopped { return }
                wakeup.sleep(for: backoff.next())
            }
        }
    }

    /// The database was deleted: its documents' jobs stop and their states go.
    private func databaseDeleted() {
        let jobs = docs.withLock { docs in
            defer { docs.removeAll() }
            return docs.values.compactMap(\.job)
        }
        for job in jobs { job.replication.cancel() }
    }

    private func removed(_ id: String) {
        let job = docs.withLock { $0.removeValue(forKey: id)?.job }
        job?.replication.cancel()
    }

    private func changed(_ id: String, _ doc: JSONObject) {
        guard let rev = doc["_rev"]?.stringValue, let app = box.app else { return }
        let state = doc["_replication_state"]?.stringValue
        let previous = docs.withLock { $0[id] }
        if previous?.rev == rev { return }
        // Our own write of the outcome: remember it, start nothing.
        if state == "completed" || state == "failed" {
            docs.withLock {
                var entry = $0[id] ?? DocState(rev: rev, state: state ?? "")
                entry.rev = rev
                entry.state = state ?? ""
                entry.job = nil
                entry.error = doc["_replication_state_reason"]?.stringValue
                $0[id] = entry
            }
            return
        }
        previous?.job?.replication.cancel()
        let usesLocal = [doc["source"], doc["target"]].contains { value in
            guard let value, !value.isNull else { return false }  // a missing endpoint is the parser's error
            return !Endpoint.isURL(value.stringValue ?? value["url"]?.stringValue ?? "")
        }
        let usesFiles = [doc["source"], doc["target"]].contains { value in
            ReplicationRequest.serverFileFields.contains { value?[$0].map { !$0.isNull } ?? false }
        }
        if (usesLocal || usesFiles) && !Self.onlyServerAdminsWrite(app.access.security.security(of: Self.name)) {
            // Local endpoints are read and written as a server admin: a document anyone else could have
            // written must not reach them (it could copy a private database out), nor have files read.
            record(
                id, rev: rev,
                failed: usesLocal
                    ? "Local database names in _replicator documents need a _replicator database that only "
                        + "server admins can write; use URLs with credentials"
                    : "`couchlite_cacert` in _replicator documents needs a _replicator database that only server "
                        + "admins can write; use `couchlite_pin`")
            return
        }
        let request: ReplicationRequest
        do {
            request = try ReplicationRequest(doc, identity: app.serverUUID, log: app.log, local: app.localEndpoint)
        } catch {
            record(id, rev: rev, failed: error.reason)
            return
        }
        let replication: Replication
        do {
            replication = try Replication.resolvingFilter(
                source: request.source, target: request.target, options: request.options)
        } catch {
            record(id, rev: rev, failed: error.description)
            return
        }
        let job = ReplicationJobs.Job(replication, docID: id)
        docs.withLock {
            $0[id] = DocState(
                rev: rev, state: "running", jobID: replication.fullID, source: replication.source.display,
                target: replication.target.display, job: job)
        }
        launch(job, id: id, rev: rev, doc: doc)
    }

    private func launch(_ job: ReplicationJobs.Job, id: String, rev: String, doc: JSONObject) {
        guard let app = box.app else { return }
        guard app.replications.add(job) else {
            record(id, rev: rev, failed: "Replication `\(job.replication.fullID)` is already running")
            return
        }
        app.replications.startInBackground(job, hold: { [app] in app.holdLocalDatabases(of: job.replication) }) {
            [self] outcome in
            switch outcome {
            case .success(let body):
                guard !job.replication.options.continuous else { return }
                writeOutcome(id, rev: rev, state: "completed", reason: nil, stats: body["history"]?[0])
            case .failure(.cancelled):
                return
            case .failure(let error):
                if error.isRetryable, current(id)?.rev == rev, !isStopped {
                    // The peer may come back: try again after a pause, as CouchDB's scheduler does.
                    docs.withLock {
                        $0[id]?.state = "crashing"
                        $0[id]?.error = error.description
                        $0[id]?.errorCount += 1
                    }
                    let count = current(id)?.errorCount ?? 1
                    Thread.sleep(forTimeInterval: min(60, Double(1 << min(count, 6))))
                    guard current(id)?.rev == rev, !isStopped else { return }
                    let retry = ReplicationJobs.Job(
                        Replication(
                            source: job.replication.source, target: job.replication.target,
                            options: job.replication.options), docID: id)
                    docs.withLock {
                        $0[id]?.job = retry
                        $0[id]?.state = "running"
                    }
                    launch(retry, id: id, rev: rev, doc: doc)
                    return
                }
                writeOutcome(id, rev: rev, state: "failed", reason: error.description, stats: nil)
            }
        }
    }

    private func current(_ id: String) -> DocState? { docs.withLock { $0[id] } }

    /// Whether `_security` lets no one but server admins (role `_admin`) write documents.
    static func onlyServerAdminsWrite(_ security: SecurityObject) -> Bool {
        for section in ["members", "admins"] {
            let names = security.json[section]?["names"]?.arrayValue ?? []
            let roles = (security.json[section]?["roles"]?.arrayValue ?? []).filter { $0.stringValue != "_admin" }
            if !names.isEmpty || !roles.isEmpty { return false }
        }
        return true
    }

    private func record(_ id: String, rev: String, failed reason: String) {
        docs.withLock { $0[id] = DocState(rev: rev, state: "failed", error: reason) }
        writeOutcome(id, rev: rev, state: "failed", reason: reason, stats: nil)
    }

    /// Writes `_replication_state` and friends into the document (unless it changed meanwhile).
    private func writeOutcome(_ id: String, rev: String, state: String, reason: String?, stats: JSON?) {
        guard current(id)?.rev == rev || current(id) == nil || current(id)?.state == "failed" else { return }
        // `_scheduler/docs` shows the outcome at once, not only when the feed brings back this write.
        docs.withLock {
            $0[id]?.state = state
            $0[id]?.error = reason
            $0[id]?.lastUpdated = Date()
        }
        let path = "/" + PathEncoding.docID(id)
        guard let response = try? endpoint.client.send(endpoint.request("GET", path + "?rev=" + rev)),
            response.status == 200, case .object(var doc)? = try? response.json()
        else { return }
        let time = ISO8601DateFormatter().string(from: Date())
        doc["_replication_state"] = .string(state)
        doc["_replication_state_time"] = .string(time)
        if let reason { doc["_replication_state_reason"] = .string(reason) }
        if let stats, case .object(let entry) = stats {
            let keys = ["docs_read", "docs_written", "doc_write_failures", "missing_checked", "missing_found"]
            let picked = entry.filter { keys.contains($0.key) }
            doc["_replication_stats"] = .object(JSONObject(picked.map { ($0.key, $0.value) }))
        }
        if let jobID = current(id)?.jobID { doc["_replication_id"] = .string(jobID) }
        _ = try? endpoint.client.send(endpoint.request("PUT", path, json: .object(doc))).discard()
    }
}

extension ReplicationError {
    /// Worth starting the job again later: the network or the peer may come back.
    var isRetryable: Bool {
        switch self {
        case .connectionRefused, .connectionReset, .timeout, .tooSlow, .unreachable, .insufficientStorage: true
        case .httpStatus(let status, _): status >= 500
        default: false
        }
    }
}
