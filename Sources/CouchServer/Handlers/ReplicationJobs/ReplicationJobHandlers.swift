import CouchStore
import CouchWire
import Foundation
import Replicator

/// The replication jobs this server runs: `POST /_replicate` starts (or cancels) one, `GET /_active_tasks` and
/// `GET /_scheduler/…` show them (server admins only, as the route table says). The replication protocol they
/// speak to a database of this server (`_revs_diff`, `_bulk_docs`, …) is served elsewhere.
struct ReplicationJobHandlers: Sendable {
    /// The jobs started by `_replicate` and `_replicator` documents.
    let replications: ReplicationJobs
    /// The `_replicator` documents' states (`_scheduler/docs`).
    let replicatorDatabase: ReplicatorDatabaseSlot
    /// Leases the local databases a replication reads or writes.
    package let store: Store
    /// Serves this server's databases to the replicator in-process.
    let localServer: HTTPLocalServer
    /// The replicator's identity (in its replication ids).
    package let serverUUID: String
    let log: Logger

    /// `POST /_replicate`.
    func replicate(_ c: RequestContext) throws -> Response {
        let body = try c.request.jsonObjectBody(limit: Limits.smallRequestBytes)
        if body["cancel"]?.boolValue == true,
            let id = body["replication_id"]?.stringValue ?? body["_local_id"]?.stringValue
        {
            return try cancelReplication(id)
        }
        let parsed = try ReplicationRequest(
            body, identity: serverUUID, log: log,
            local: { [localServer, serverUUID] in localServer.replicationEndpoint($0, identity: serverUUID) })
        let replication: Replication
        do {
            replication = try Replication.resolvingFilter(
                source: parsed.source, target: parsed.target, options: parsed.options)
        } catch {
            let (status, name) = Self.replicationErrorStatus(error)
            return .json(status, ["error": .string(name), "reason": .string(error.description)])
        }
        if parsed.cancel { return try cancelReplication(replication.fullID) }
        let job = ReplicationJobs.Job(replication, docID: nil)
        if parsed.options.continuous {
            if let scheduler = replicatorDatabase.scheduler {
                scheduler.addTransient(replication)
            } else if replications.add(job) {
                replications.startInBackground(job, hold: { [store] in store.leaseLocalDatabases(of: replication) }) {
                    [log] outcome in
                    if case .failure(let error) = outcome, error != .cancelled {
                        log.error("continuous replication stopped", ["error": error.description])
                    }
                }
            }
            return .json(.accepted, ["ok": true, "_local_id": .string(replication.fullID)])
        }
        let alreadyRunning = CouchError.preconditionFailed("Replication `\(replication.fullID)` is already running")
        let outcome: Result<JSON, ReplicationError>
        if let scheduler = replicatorDatabase.scheduler {
            // A transient job of the scheduler, under `max_jobs` like every other (it may wait `pending`).
            guard replications.job(id: replication.fullID) == nil, let result = scheduler.runTransient(replication)
            else { throw alreadyRunning }
            outcome = result
        } else {
            guard replications.add(job) else { throw alreadyRunning }
            let leases = store.leaseLocalDatabases(of: replication)
            do {
                outcome = .success(try replication.run())
            } catch {
                outcome = .failure(error)
            }
            // The job is over before its answer leaves: a client that replicates the same again at once is not told
            // it is still running.
            for lease in leases { lease.release() }
            replications.remove(job)
            if case .failure(let error) = outcome, error != .cancelled { replications.noteCrash() }
        }
        switch outcome {
        case .success(let result):
            return .json(.ok, result)
        case .failure(let error):
            let (status, name) = Self.replicationErrorStatus(error)
            var reason = error.description
            if case .databaseNotFound(let endpoint) = error { reason = "could not open \(endpoint)" }
            return .json(status, ["error": .string(name), "reason": .string(reason)])
        }
    }

    /// CouchDB's answers for a failed one-shot replication.
    private static func replicationErrorStatus(_ error: ReplicationError) -> (Response.Status, String) {
        switch error {
        case .databaseNotFound: (.notFound, "db_not_found")
        case .unauthorized: (.unauthorized, "unauthorized")
        case .forbidden: (.forbidden, "forbidden")
        case .badRequest: (.badRequest, "bad_request")
        case .filterNotFound: (.notFound, "not_found")
        case .cancelled: (.internalServerError, "cancelled")
        default: (.internalServerError, "replication_failed")
        }
    }

    private func cancelReplication(_ id: String) throws -> Response {
        if replicatorDatabase.scheduler?.cancelTransient(id) == true {
            return .json(.ok, ["ok": true, "_local_id": .string(id)])
        }
        guard let job = replications.job(id: id) else {
            throw CouchError.notFound("Replication `\(id)` not found")
        }
        job.replication.cancel()
        return .json(.ok, ["ok": true, "_local_id": .string(id)])
    }

    /// `GET /_active_tasks`: one entry per running replication, with CouchDB's fields.
    func activeTasks(_ c: RequestContext) throws -> Response {
        let tasks = replications.all.filter { !$0.isFinished }.map(Self.taskJSON)
        return .json(.ok, .array(tasks))
    }

    private static func taskJSON(_ job: ReplicationJobs.Job) -> JSON {
        let replication = job.replication
        let stats = job.stats
        return .object(
            JSONObject([
                ("type", "replication"), ("node", .string(App.nodeName)), ("pid", .string(job.pid)),
                ("process_status", "waiting"), ("user", .null), ("replication_id", .string(replication.fullID)),
                ("doc_id", job.docID.map(JSON.string) ?? .null),
                ("database", job.docID == nil ? .null : "_replicator"),
                ("source", .string(replication.source.redacted)), ("target", .string(replication.target.redacted)),
                ("continuous", .bool(replication.options.continuous)),
                ("docs_read", .int(stats.docsRead)), ("docs_written", .int(stats.docsWritten)),
                ("doc_write_failures", .int(stats.docWriteFailures)),
                ("missing_revisions_found", .int(stats.missingFound)),
                ("revisions_checked", .int(stats.missingChecked)),
                ("changes_pending", stats.changesPending.map(JSON.int) ?? .null),
                ("bulk_get_docs", .int(stats.bulkGetDocs)), ("bulk_get_attempts", .int(stats.bulkGetAttempts)),
                ("checkpointed_source_seq", stats.checkpointedSeq), ("source_seq", stats.throughSeq),
                ("through_seq", stats.throughSeq),
                ("checkpoint_interval", .int(Int(replication.options.checkpointInterval.components.seconds * 1000))),
                ("started_on", .int(Int(replication.startedOn.timeIntervalSince1970))),
                ("updated_on", .int(Int(replication.updatedOn.timeIntervalSince1970))),
            ]))
    }
}

extension ReplicationJobHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route([.POST], "/_replicate", .serverAdmin, body: .small, replicate),
            Route(read, "/_active_tasks", .serverAdmin, activeTasks),
            Route(read, "/_scheduler/jobs", .serverAdmin, schedulerJobs),
            Route(read, "/_scheduler/jobs/{id}", .serverAdmin, schedulerJob),
            Route(read, "/_scheduler/docs", .serverAdmin, schedulerDocs),
            Route(read, "/_scheduler/docs/{replicator}", .serverAdmin, schedulerDocs),
            Route(read, "/_scheduler/docs/{replicator}/{doc…}", .serverAdmin, schedulerDocs),
        ]
    }
}
