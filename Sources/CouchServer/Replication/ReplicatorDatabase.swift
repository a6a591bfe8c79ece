import CouchStore
import CouchWire
import Foundation
import Replicator
import Synchronization

/// The `_replicator` database: each document there is a replication job, started when the document
/// appears (and again after a restart of the server, resuming from its checkpoint), cancelled when it
/// is deleted, restarted when it is edited. At most `[replicator] max_jobs` run at once; the others wait, `pending`,
/// and a pass every `interval` rotates up to `max_churn` of them in for the longest-running continuous ones
/// (`SchedulerPlan` has CouchDB's rules, `ReplicatorDatabase+Scheduling` applies them). A job that crashes (its peer
/// is down, refuses the password, lacks the database) is started again after a pause that doubles with each
/// consecutive crash, as CouchDB's scheduler does;
/// one-shot jobs record their outcome in the document (`_replication_state` `completed`/`failed`,
/// `_replication_state_time`, `_replication_stats`, `_replication_state_reason`), as CouchDB 3 does.
/// `GET /_scheduler/docs` and `/_scheduler/jobs` show every document's state and history, and each change of state
/// is one log line with its reason.
///
/// The database is read through the app's in-process server like any local endpoint, following its
/// `_changes` with long-polls on a thread of its own.
final class ReplicatorDatabase: Sendable {
    package static let name = "_replicator"

    let box: AppBox
    private let endpoint: Endpoint
    let log: Logger
    /// The first pause after a crash (CouchDB's 30 s).
    let retryBase: Duration
    /// `max_jobs`, `interval`, `max_churn`; its `changed` wakes the scheduler's timer (and `stop()` does).
    let settings: ReplicatorSettings
    let docs = Mutex<[String: ReplicatorDocState]>([:])
    private let stopped = Mutex<Bool>(false)
    private let wakeup = Wakeup()

    init(app: App) {
        box = AppBox()
        box.app = app
        endpoint = app.localEndpoint(Self.name)
        log = app.log
        retryBase = .seconds(app.options.replicatorRetrySeconds)
        settings = app.replicatorSettings
    }

    /// Creates the database if needed and starts following it, and starts the scheduler's timer.
    func start() {
        let bodies: [@Sendable () -> Void] = [{ [self] in follow() }, { [self] in runTimer() }]
        for body in bodies {
            let thread = Thread(block: body)
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Stops following the database and the scheduler's timer (the running jobs are stopped by
    /// `ReplicationJobs.stopAll`).
    func stop() {
        stopped.withLock { $0 = true }
        endpoint.client.cancel()
        wakeup.wake()
        settings.changed.wake()
        let running = docs.withLock { docs in
            docs.keys.compactMap { id -> ReplicationJobs.Job? in
                guard let job = docs[id]?.job, !job.isFinished else { return nil }
                docs[id]?.history?.record(.stopped)
                return job
            }
        }
        for job in running { logStopped(job, reason: "server stopping") }
        releaseWaiters()
    }

    /// The `_replicator` documents' states, by id.
    var states: [(String, ReplicatorDocState)] { jobStates.filter { !Self.isTransient($0.0) } }

    /// Every scheduled job's state: the documents' and the continuous `_replicate` jobs' (`transientKey`).
    var jobStates: [(String, ReplicatorDocState)] { docs.withLock { $0.sorted { $0.key < $1.key } } }

    var isStopped: Bool { stopped.withLock { $0 } }

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
        let entries = docs.withLock { docs in
            let documents = docs.filter { !Self.isTransient($0.key) }
            for id in documents.keys { docs[id] = nil }
            return Array(documents.values)
        }
        for entry in entries { end(entry, reason: "replicator database deleted") }
    }

    private func removed(_ id: String) {
        guard let entry = docs.withLock({ $0.removeValue(forKey: id) }) else { return }
        end(entry, reason: "document deleted")
    }

    /// Ends a document's job: its run is cancelled (a waiting job has nothing to end).
    private func end(_ entry: ReplicatorDocState, reason: String) {
        guard let job = entry.job, !job.isFinished else { return }
        job.replication.cancel()
        logStopped(job, reason: reason)
    }

    private func changed(_ id: String, _ doc: JSONObject) {
        guard let rev = doc["_rev"]?.stringValue, let app = box.app else { return }
        let state = doc["_replication_state"]?.stringValue
        let previous = docs.withLock { $0[id] }
        if previous?.rev == rev { return }
        // Our own write of the outcome (or one found after a restart): remember it, start nothing.
        if state == "completed" || state == "failed" {
            docs.withLock { $0[id] = Self.outcome(of: doc, rev: rev, state: state ?? "") }
            return
        }
        if let previous { end(previous, reason: "document updated") }
        var entry = ReplicatorDocState(rev: rev)
        entry.source = ReplicatorDocState.shown(doc["source"])
        entry.target = ReplicatorDocState.shown(doc["target"])
        docs.withLock { $0[id] = entry }
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
        // The run copies it over clients of its own; the filter's fetch leaves no connection behind.
        let template = Replication(
            source: replication.source.fresh(), target: replication.target.fresh(), options: replication.options)
        let scheduled = docs.withLock { docs -> Result<ReplicationJobs.Job?, Duplicate> in
            // One job per replication id: CouchDB's scheduler keeps a crashed job (waiting to run again) under
            // its id, so another document asking for the same replication fails while it is there.
            let other = docs.first { $0.key != id && $0.value.jobID == template.fullID && $0.value.history != nil }
            if let other { return .failure(Duplicate(docID: Self.isTransient(other.key) ? nil : other.key)) }
            guard docs[id]?.rev == rev else { return .success(nil) }
            docs[id]?.jobID = template.fullID
            docs[id]?.history = SchedulerHistory()
            docs[id]?.template = template
            return .success(Self.startIfRoom(id, in: &docs, maxJobs: settings.maxJobs.value))
        }
        switch scheduled {
        case .success(let job?): launch(job, id: id, rev: rev)
        case .success(nil): return
        case .failure(let duplicate): failDuplicate(template.fullID, id: id, rev: rev, of: duplicate.docID)
        }
    }

    /// Another document's job has the same replication id.
    private struct Duplicate: Error {
        var docID: String?
    }

    /// CouchDB's words for a document whose replication already runs for another (`nil`: for `_replicate`).
    func failDuplicate(_ jobID: String, id: String, rev: String, of other: String?) {
        let by = other.map { "triggered by document `\($0)` from db `\(Self.name)`" } ?? "triggered by `_replicate`"
        record(id, rev: rev, failed: "Replication `\(jobID)` specified by document `\(id)` already started, \(by)")
    }

    /// The state of a document that has its outcome written in it.
    private static func outcome(of doc: JSONObject, rev: String, state: String) -> ReplicatorDocState {
        var entry = ReplicatorDocState(rev: rev)
        entry.source = ReplicatorDocState.shown(doc["source"])
        entry.target = ReplicatorDocState.shown(doc["target"])
        let time = doc["_replication_state_time"]?.stringValue.flatMap { ISO8601DateFormatter().date(from: $0) }
        if state == "completed" {
            entry.outcome = .completed(stats: doc["_replication_stats"] ?? .null, time: time ?? Date())
        } else {
            entry.outcome = .failed(reason: doc["_replication_state_reason"]?.stringValue ?? "", time: time ?? Date())
        }
        return entry
    }

    func logStopped(_ job: ReplicationJobs.Job, reason: String) {
        log.info(
            "replication job stopped",
            ["replication_id": job.replication.fullID, "doc_id": job.docID ?? "", "reason": reason])
    }

    /// Whether `_security` lets no one but server admins (role `_admin`) write documents.
    static func onlyServerAdminsWrite(_ security: SecurityObject) -> Bool {
        for section in ["members", "admins"] {
            let names = security.json[section]?["names"]?.arrayValue ?? []
            let roles = (security.json[section]?["roles"]?.arrayValue ?? []).filter { $0.stringValue != "_admin" }
            if !names.isEmpty || !roles.isEmpty { return false }
        }
        return true
    }

    /// The document cannot run (CouchDB's `failed`, logged as its "Error processing replication doc").
    func record(_ id: String, rev: String, failed reason: String) {
        log.error("error processing replication doc", ["doc_id": id, "reason": reason])
        writeOutcome(id, rev: rev, .failed(reason: reason, time: Date()))
    }

    /// Writes `_replication_state` and friends into the document, unless it changed meanwhile.
    func writeOutcome(_ id: String, rev: String, _ outcome: ReplicatorDocState.Outcome) {
        // `_scheduler/docs` shows the outcome at once, not only when the feed brings back this write.
        let current = docs.withLock { docs -> Bool in
            guard docs[id]?.rev == rev else { return false }
            docs[id]?.outcome = outcome
            docs[id]?.history = nil
            docs[id]?.job = nil
            docs[id]?.template = nil
            return true
        }
        guard current else { return }
        let path = "/" + PathEncoding.docID(id)
        guard let response = try? endpoint.client.send(endpoint.request("GET", path + "?rev=" + rev)),
            response.status == 200, case .object(var doc)? = try? response.json()
        else { return }
        switch outcome {
        case .completed(let stats, let time):
            doc["_replication_state"] = "completed"
            doc["_replication_state_time"] = .string(SchedulerHistory.iso8601(time))
            doc["_replication_stats"] = stats
        case .failed(let reason, let time):
            doc["_replication_state"] = "failed"
            doc["_replication_state_time"] = .string(SchedulerHistory.iso8601(time))
            doc["_replication_state_reason"] = .string(reason)
        }
        _ = try? endpoint.client.send(endpoint.request("PUT", path, json: .object(doc))).discard()
    }
}

extension ReplicationError {
    /// The document itself is wrong, and running it again cannot help: it is `failed`, not retried. Everything
    /// else (a peer down, a wrong password, a missing database) CouchDB's scheduler retries for ever, with backoff.
    var isDocumentError: Bool {
        switch self {
        case .badRequest, .filterNotFound, .certificateRejected: true
        default: false
        }
    }
}
