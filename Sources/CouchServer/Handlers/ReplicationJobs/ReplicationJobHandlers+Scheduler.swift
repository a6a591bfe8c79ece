import CouchWire
import Foundation
import Replicator

/// `GET /_scheduler/jobs` and `GET /_scheduler/docs`: the replication scheduler's view, in CouchDB's shape.
extension ReplicationJobHandlers {
    /// `GET /_scheduler/jobs`.
    func schedulerJobs(_ c: RequestContext) throws {
        let jobs = replications.all.filter { !$0.isFinished }.map(Self.schedulerJobJSON)
        try c.reply.json(200, ["total_rows": .int(jobs.count), "offset": 0, "jobs": .array(jobs)])
    }

    /// `GET /_scheduler/docs[/{replicator db}[/{docid}]]`.
    func schedulerDocs(_ c: RequestContext) throws {
        let docID = c.parameters["doc"]
        let docs = replicatorDocStates(docID: docID)
        if docID != nil {
            guard let doc = docs.first else { throw CouchError.notFound("missing") }
            return try c.reply.json(200, doc)
        }
        try c.reply.json(200, ["total_rows": .int(docs.count), "offset": 0, "docs": .array(docs)])
    }

    private static func schedulerJobJSON(_ job: ReplicationJobs.Job) -> JSON {
        let replication = job.replication
        let stats = replication.stats
        return .object(
            JSONObject([
                ("database", job.docID == nil ? .null : "_replicator"), ("id", .string(replication.fullID)),
                ("pid", .null), ("source", .string(replication.source.display)),
                ("target", .string(replication.target.display)), ("user", .null),
                ("doc_id", job.docID.map(JSON.string) ?? .null),
                (
                    "info",
                    [
                        "docs_read": .int(stats.docsRead), "docs_written": .int(stats.docsWritten),
                        "doc_write_failures": .int(stats.docWriteFailures),
                        "changes_pending": stats.changesPending.map(JSON.int) ?? .null,
                        "checkpointed_source_seq": stats.checkpointedSeq,
                    ]
                ),
                (
                    "history",
                    [
                        [
                            "timestamp": .string(ISO8601DateFormatter().string(from: replication.startedOn)),
                            "type": "started",
                        ]
                    ]
                ),
                ("node", .string(App.nodeName)),
                ("start_time", .string(ISO8601DateFormatter().string(from: replication.startedOn))),
            ]))
    }

    /// `_scheduler/docs` rows: every `_replicator` document the server has seen, with its state.
    private func replicatorDocStates(docID: String?) -> [JSON] {
        let formatter = ISO8601DateFormatter()
        return replicatorDatabase.states.filter { docID == nil || $0.0 == docID }.map { id, state in
            let stats = state.job?.replication.stats
            var info: JSON = .null
            if let stats {
                info = [
                    "docs_read": .int(stats.docsRead), "docs_written": .int(stats.docsWritten),
                    "doc_write_failures": .int(stats.docWriteFailures),
                    "changes_pending": stats.changesPending.map(JSON.int) ?? .null,
                    "checkpointed_source_seq": stats.checkpointedSeq,
                ]
            } else if let error = state.error {
                info = ["error": .string(error)]
            }
            return .object(
                JSONObject([
                    ("database", "_replicator"), ("doc_id", .string(id)), ("id", state.jobID.map(JSON.string) ?? .null),
                    ("node", .string(App.nodeName)), ("source", state.source.map(JSON.string) ?? .null),
                    ("target", state.target.map(JSON.string) ?? .null), ("state", .string(state.state)),
                    ("info", info), ("error_count", .int(state.errorCount)),
                    ("last_updated", .string(formatter.string(from: state.lastUpdated))),
                    ("start_time", .string(formatter.string(from: state.startTime))),
                ]))
        }
    }
}
