import CouchWire
import Foundation
import Replicator

/// `GET /_scheduler/jobs[/{id}]` and `GET /_scheduler/docs[/_replicator[/{docid}]]`: the replication scheduler's
/// view, in CouchDB 3.4.3's shapes (`couch_replicator_scheduler:job_ejson`, `couch_replicator_doc_processor`'s
/// `ejson_doc` and `couch_replicator:info_from_doc`). Jobs are the running `_replicate` ones and every scheduled
/// `_replicator` document's and continuous `_replicate`'s, running or waiting (`pending`, or after a crash);
/// documents are every `_replicator` document seen, with their state.
extension ReplicationJobHandlers {
    /// `GET /_scheduler/jobs`, sorted by id, with `limit` (100) and `skip`.
    func schedulerJobs(_ c: RequestContext) throws -> Response {
        let jobs = schedulerJobRows().sorted { $0.id < $1.id }.map(\.json)
        return .json(.ok, try Self.page(jobs, "jobs", c.query, limit: 100))
    }

    /// `GET /_scheduler/jobs/{id}`. A job id has `+`s (`<hash>+continuous`), which a path decodes as spaces
    /// (CouchDB's `couch_replicator_ids:convert` turns them back, so users need not write `%2B`); so does this.
    func schedulerJob(_ c: RequestContext) throws -> Response {
        let id = (c.parameters["id"] ?? "").replacing(" ", with: "+")
        guard let row = schedulerJobRows().first(where: { $0.id == id }) else { throw CouchError.notFound("missing") }
        return .json(.ok, row.json)
    }

    /// `GET /_scheduler/docs[/{replicator db}[/{docid}]]`, with `states` (a comma-separated filter), `limit` and
    /// `skip`.
    func schedulerDocs(_ c: RequestContext) throws -> Response {
        if let database = c.parameters["replicator"], database != ReplicatorDatabase.name {
            throw CouchError.badRequest("Invalid path")
        }
        let states = replicatorDatabase.states
        if let docID = c.parameters["doc"] {
            guard let (id, state) = states.first(where: { $0.0 == docID }) else {
                throw CouchError.notFound("missing")
            }
            return .json(.ok, Self.docJSON(id, state))
        }
        let wanted = try Self.stateFilter(c.query["states"])
        let docs = states.filter { wanted.isEmpty || wanted.contains($0.1.state) }.map(Self.docJSON)
        // As CouchDB's (read from the database's view), `total_rows` counts every document, filtered or not.
        return .json(.ok, try Self.page(docs, "docs", c.query, limit: nil, total: states.count))
    }

    /// CouchDB's states; an unknown one is CouchDB's `query_parse_error` (`parse_replication_state_filter`).
    private static func stateFilter(_ value: String?) throws(CouchError) -> Set<String> {
        guard let value, !value.isEmpty else { return [] }
        let known = ["initializing", "error", "running", "pending", "crashing", "completed", "failed"]
        let states = Set(value.split(separator: ",").map { $0.lowercased() })
        guard states.isSubset(of: known) else {
            throw .queryParseError("States must be one or more of [\(known.joined(separator: ","))]")
        }
        return states
    }

    /// `{"total_rows","offset",name:[…]}` of `rows` after `skip`, at most `limit`.
    private static func page(
        _ rows: [JSON], _ name: String, _ query: QueryParameters, limit: Int?, total: Int? = nil
    ) throws -> JSON {
        let skip = max(0, try query.int("skip") ?? 0)
        let limit = max(0, try query.int("limit") ?? limit ?? Int.max)
        let offset = min(skip, rows.count)
        let shown = Array(rows[offset...].prefix(limit))
        return .object(
            JSONObject([
                ("total_rows", .int(total ?? rows.count)), ("offset", .int(offset)), (name, .array(shown)),
            ]))
    }

    private struct JobRow {
        var id: String
        var json: JSON
    }

    private func schedulerJobRows() -> [JobRow] {
        let states = replicatorDatabase.jobStates
        let scheduled = states.compactMap { key, state -> JobRow? in
            guard let id = state.jobID, let history = state.history, state.outcome == nil else { return nil }
            let docID = ReplicatorDatabase.isTransient(key) ? nil : key
            return Self.jobRow(
                id: id, job: state.job, source: state.source, target: state.target, docID: docID, stats: state.stats,
                history: history, startTime: state.startTime)
        }
        // The runs the scheduler does not have: one-shot `_replicate` jobs, which run while their request waits.
        let ids = Set(scheduled.map(\.id))
        let unscheduled = replications.all.filter {
            $0.docID == nil && !$0.isFinished && !ids.contains($0.replication.fullID)
        }
        let transient = unscheduled.map { job in
            var history = SchedulerHistory(added: job.started)
            history.record(.started, at: job.started)
            return Self.jobRow(
                id: job.replication.fullID, job: job, source: job.replication.source.redacted,
                target: job.replication.target.redacted, docID: nil, stats: job.stats, history: history,
                startTime: job.started)
        }
        return transient + scheduled
    }

    private static func jobRow(
        id: String, job: ReplicationJobs.Job?, source: String?, target: String?, docID: String?,
        stats: ReplicationStats, history: SchedulerHistory, startTime: Date
    ) -> JobRow {
        let running = job.map { !$0.isFinished } ?? false
        let json = JSON.object(
            JSONObject([
                ("id", .string(id)), ("pid", running ? job.map { .string($0.pid) } ?? .null : .null),
                ("source", source.map(JSON.string) ?? .null), ("target", target.map(JSON.string) ?? .null),
                ("database", docID == nil ? .null : .string(ReplicatorDatabase.name)), ("user", .null),
                ("doc_id", docID.map(JSON.string) ?? .null), ("info", info(stats, running: running)),
                ("history", history.json), ("node", .string(App.nodeName)),
                ("start_time", .string(SchedulerHistory.iso8601(startTime))),
            ]))
        return JobRow(id: id, json: json)
    }

    /// A job's `info`: its counters, or null (as CouchDB's before a job reported any) for a job not running that
    /// never counted anything.
    private static func info(_ stats: ReplicationStats, running: Bool) -> JSON {
        guard running || stats != ReplicationStats() else { return .null }
        return .object(JSONObject(stats.couchInfo(sequences: true)))
    }

    /// One `_scheduler/docs` row.
    private static func docJSON(_ docID: String, _ state: ReplicatorDocState) -> JSON {
        let database: (String, JSON) = ("database", .string(ReplicatorDatabase.name))
        let endpoints: [(String, JSON)] = [
            ("source", state.source.map(JSON.string) ?? .null), ("target", state.target.map(JSON.string) ?? .null),
        ]
        switch state.outcome {
        case .completed(let stats, let time)?:
            // `info_from_doc`: the document's `_replication_stats`, whose `start_time` moves out of `info`.
            let fields = stats.objectValue ?? JSONObject()
            let info = JSONObject(fields.filter { $0.key != "start_time" }.map { ($0.key, $0.value) })
            return .object(
                JSONObject(
                    [database, ("doc_id", .string(docID)), ("id", .null)] + endpoints + [
                        ("state", "completed"), ("error_count", 0), ("info", .object(info)),
                        ("start_time", fields["start_time"] ?? .null),
                        ("last_updated", .string(SchedulerHistory.iso8601(time))),
                    ]))
        case .failed(let reason, let time)?:
            let shown = JSON.string(SchedulerHistory.iso8601(time))
            return .object(
                JSONObject(
                    [database, ("doc_id", .string(docID)), ("id", .null)] + endpoints + [
                        ("state", "failed"), ("error_count", 1), ("info", ["error": .string(reason)]),
                        ("start_time", shown), ("last_updated", shown),
                    ]))
        case nil:
            guard let history = state.history, let id = state.jobID else {
                // Not read as a job yet: CouchDB's `initializing`.
                return .object(
                    JSONObject([
                        database, ("doc_id", .string(docID)), ("id", .null), ("node", .string(App.nodeName)),
                        ("state", "initializing"), ("info", .null), ("error_count", 0),
                        ("last_updated", .string(SchedulerHistory.iso8601(state.startTime))),
                        ("start_time", .string(SchedulerHistory.iso8601(state.startTime))),
                    ]))
            }
            let name = state.state
            let info: JSON =
                name == "crashing"
                ? ["error": .string(history.crashReason ?? "")] : Self.info(state.stats, running: name == "running")
            return .object(
                JSONObject(
                    [database, ("doc_id", .string(docID)), ("id", .string(id)), ("node", .string(App.nodeName))]
                        + endpoints + [
                            ("state", .string(name)), ("info", info), ("error_count", .int(state.errorCount)),
                            ("last_updated", .string(SchedulerHistory.iso8601(history.lastUpdated))),
                            ("start_time", .string(SchedulerHistory.iso8601(state.startTime))),
                            ("source_proxy", .null), ("target_proxy", .null),
                        ]))
        }
    }
}
