import CouchWire
import Foundation
import Synchronization

/// Checkpoints: `_local/<replication id>` on both ends, in CouchDB's shape, and where to resume.
extension Replication {
    var checkpointPath: String { "/_local/" + replicationID }

    /// Reads both checkpoint documents and picks the sequence to start from.
    func readCheckpoints() throws(ReplicationError) {
        (sourceLog, sourceLogRev) = try readLog(source)
        (targetLog, targetLogRev) = try readLog(target)
        startSeq = Replication.startSequence(source: sourceLog, target: targetLog)
    }

    private func readLog(_ endpoint: Endpoint) throws(ReplicationError) -> (JSON?, String?) {
        let response = try call(endpoint, endpoint.request("GET", checkpointPath))
        if response.status == 404 {
            response.discard()
            return (nil, nil)
        }
        let log = try expect(response, endpoint, [200], "the checkpoint \(checkpointPath)")
        return (log, log["_rev"]?.stringValue)
    }

    /// CouchDB's log comparison: the same session on both sides resumes at the source's
    /// `source_last_seq`; otherwise the most recent session both histories share gives its
    /// `recorded_seq`; otherwise everything is replicated again (from 0).
    static func startSequence(source: JSON?, target: JSON?) -> JSON {
        guard let source, let target else { return 0 }
        if let session = source["session_id"]?.stringValue, session == target["session_id"]?.stringValue {
            return source["source_last_seq"] ?? 0
        }
        var targetSessions = Set<String>()
        if let session = target["session_id"]?.stringValue { targetSessions.insert(session) }
        for entry in target["history"]?.arrayValue ?? [] {
            if let session = entry["session_id"]?.stringValue { targetSessions.insert(session) }
        }
        for entry in source["history"]?.arrayValue ?? [] {
            if let session = entry["session_id"]?.stringValue, targetSessions.contains(session) {
                return entry["recorded_seq"] ?? 0
            }
        }
        return 0
    }

    /// `_ensure_full_commit` on the target, then the checkpoint document on both ends. Runs to its end even
    /// once `stop()` was called (the point of stopping gently is this write).
    func checkpoint(_ seq: JSON) throws(ReplicationError) {
        shared.withLock { $0.checkpointing = true }
        defer { shared.withLock { $0.checkpointing = false } }
        do {
            try writeCheckpoint(seq)
            update { $0.checkpointsWritten += 1 }
        } catch {
            update { $0.checkpointFailures += 1 }
            throw error
        }
    }

    private func writeCheckpoint(_ seq: JSON) throws(ReplicationError) {
        let commit = try call(target, target.request("POST", "/_ensure_full_commit", json: .object(JSONObject())))
        // A target without the endpoint (Couchbase Lite, PouchDB Server) commits every write anyway.
        if commit.status == 404 || commit.status == 405 || commit.status == 400 {
            commit.discard()
        } else {
            _ = try expect(commit, target, [200, 201], "_ensure_full_commit")
        }
        update { $0.checkpointedSeq = seq }
        var fields: [(String, JSON)] = [
            ("session_id", .string(sessionID)), ("source_last_seq", seq), ("replication_id_version", 4),
            ("history", .array(history(seq))),
        ]
        targetLogRev = try writeLog(target, &fields, rev: targetLogRev, required: true)
        sourceLogRev = try writeLog(source, &fields, rev: sourceLogRev, required: false)
        let written = JSON.object(JSONObject(fields))
        sourceLog = written
        targetLog = written
        lastCheckpoint = ContinuousClock.now
        shared.withLock {
            $0.docsSinceCheckpoint = 0
            $0.wroteAnything = false
        }
    }

    /// Writes one checkpoint document; a 409 (someone else wrote it) is retried with the current rev.
    /// A source that refuses the write (read-only, 401/403) costs a full restart next time, not the job.
    private func writeLog(
        _ endpoint: Endpoint, _ fields: inout [(String, JSON)], rev: String?, required: Bool
    ) throws(ReplicationError) -> String? {
        var currentRev = rev
        for _ in 0..<2 {
            var body: [(String, JSON)] = [("_id", .string("_local/" + replicationID))]
            if let currentRev { body.append(("_rev", .string(currentRev))) }
            body += fields
            var request = endpoint.request("PUT", checkpointPath, json: .object(JSONObject(body)))
            request.headers.add("X-Couch-Full-Commit", "false")
            let response = try call(endpoint, request)
            if response.status == 409 {
                response.discard()
                let again = try call(endpoint, endpoint.request("GET", checkpointPath))
                currentRev =
                    again.status == 200
                    ? try expect(again, endpoint, [200], "the checkpoint \(checkpointPath)")["_rev"]?.stringValue : nil
                if again.status != 200 { again.discard() }
                continue
            }
            if !required && (response.status == 401 || response.status == 403) {
                response.discard()
                return currentRev
            }
            // 202: a cluster wrote fewer copies than its quorum (a node is down); the checkpoint is stored.
            return try expect(response, endpoint, [200, 201, 202], "the checkpoint write")["rev"]?.stringValue
        }
        throw .httpStatus(409, "\(endpoint.display): checkpoint update conflict")
    }

    /// This session's history entry followed by the older sessions' (at most 50 in all).
    func history(_ seq: JSON) -> [JSON] {
        let counters = stats
        let entry = JSON.object(
            JSONObject([
                ("session_id", .string(sessionID)), ("start_time", .string(Self.httpDate(sessionStart))),
                ("end_time", .string(Self.httpDate(Date()))), ("start_last_seq", startSeq),
                ("end_last_seq", seq), ("recorded_seq", seq), ("missing_checked", .int(counters.missingChecked)),
                ("missing_found", .int(counters.missingFound)), ("docs_read", .int(counters.docsRead)),
                ("docs_written", .int(counters.docsWritten)),
                ("doc_write_failures", .int(counters.docWriteFailures)),
                ("bulk_get_docs", .int(counters.bulkGetDocs)), ("bulk_get_attempts", .int(counters.bulkGetAttempts)),
            ]))
        let older = (sourceLog?["history"]?.arrayValue ?? []).filter { $0["session_id"]?.stringValue != sessionID }
        return Array(([entry] + older).prefix(50))
    }

    /// RFC 1123, as CouchDB writes `start_time`.
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
