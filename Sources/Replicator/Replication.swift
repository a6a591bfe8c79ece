import CouchCrypto
import CouchWire
import Foundation
import Synchronization

/// One replication from a source database to a target, as CouchDB's replicator runs it:
///
/// 1. `GET` both databases (`create_target` creates a missing target);
/// 2. read both checkpoints (`_local/<replication id>`) and start from the last sequence both agree on;
/// 3. batches of `_changes?style=all_docs`: `_revs_diff` on the target, missing revisions fetched with
///    `_bulk_get` (or `open_revs` where the source has no `_bulk_get`), written with
///    `_bulk_docs new_edits=false`, or a streamed multipart `PUT ?new_edits=false` for documents whose
///    attachment bytes must travel;
/// 4. checkpoints on both sides every `checkpointDocs` documents or `checkpointInterval`, and at the end
///    (after `_ensure_full_commit` on the target).
///
/// `run()` works on the calling thread; `cancel()` and `stats` may be used from any other.
///
/// `@unchecked Sendable`: what other threads reach (`stats`, cancelling, stopping, and the document count
/// workers add to) is in `shared`, behind its `Mutex`; the other mutable properties are used only by the thread in
/// `run()`.
public final class Replication: @unchecked Sendable {
    public let source: Endpoint
    public let target: Endpoint
    public let options: ReplicationOptions
    /// The checkpoint document's id without `_local/`.
    public let replicationID: String
    public let sessionID: String
    public let startedOn = Date()
    let shared = Mutex<Shared>(Shared())

    struct Shared {
        var stats = ReplicationStats()
        var updatedOn = Date()
        var cancelled = false
        /// Set by `stop()`: requests fail until the final checkpoint, which `checkpointing` lets through.
        var stopping = false
        var checkpointing = false
        /// Documents written or refused since the last checkpoint (workers add to it).
        var docsSinceCheckpoint = 0
        var wroteAnything = false
    }

    // Everything below is touched only by the thread in `run()`.
    var sourceLog: JSON?
    var targetLog: JSON?
    var sourceLogRev: String?
    var targetLogRev: String?
    var startSeq: JSON = 0
    var lastCheckpoint = ContinuousClock.now
    var bulkGetEnabled: Bool
    var sessionStart = Date()
    /// The sequence up to which every change has been written to the target (what a stop checkpoints),
    /// once both checkpoints have been read.
    var completedSeq: JSON?

    public init(source: Endpoint, target: Endpoint, options: ReplicationOptions) {
        self.source = source
        self.target = target
        self.options = options
        bulkGetEnabled = options.useBulkGet
        let identity = JSON.array([
            .string(options.replicatorIdentity), .string(source.identity), .string(target.identity),
            options.identityJSON,
        ])
        replicationID = Digest.hash(.md5, identity.serialized()).hexString
        sessionID = Secrets.randomBytes(16).hexString
    }

    /// The id CouchDB reports (`_local_id`): the base id plus `+continuous`/`+create_target`.
    public var fullID: String {
        replicationID + (options.continuous ? "+continuous" : "") + (options.createTarget ? "+create_target" : "")
    }

    public var stats: ReplicationStats { shared.withLock { $0.stats } }
    public var updatedOn: Date { shared.withLock { $0.updatedOn } }
    var isCancelled: Bool { shared.withLock { $0.cancelled } }
    var isStopping: Bool { shared.withLock { $0.stopping } }

    /// Stops the replication: requests in flight fail at once and `run()` throws `.cancelled`.
    public func cancel() {
        shared.withLock { $0.cancelled = true }
        source.client.cancel()
        target.client.cancel()
    }

    /// Stops the replication but keeps its progress (SIGTERM, Ctrl-C): requests in flight are interrupted,
    /// the sequence up to which every change was written is checkpointed on both ends, then `run()` throws
    /// `.cancelled`. A restart resumes from there. Changes of a batch cut short are simply checked again.
    public func stop() {
        let interrupt = shared.withLock { state -> Bool in
            state.stopping = true
            return !state.checkpointing
        }
        guard interrupt else { return }
        source.client.interrupt()
        target.client.interrupt()
    }

    /// Throws once `stop()` was called, except for the requests of a checkpoint (for which the clients'
    /// interruption is lifted).
    func checkStopping(_ endpoint: Endpoint) throws(ReplicationError) {
        let (stopping, checkpointing) = shared.withLock { ($0.stopping, $0.checkpointing) }
        guard stopping else { return }
        guard checkpointing else { throw .cancelled }
        endpoint.client.resume()
    }

    func update(_ change: (inout ReplicationStats) -> Void) {
        shared.withLock {
            change(&$0.stats)
            $0.updatedOn = Date()
        }
    }

    /// Runs to the end (or, when continuous, until cancelled).
    /// - Returns: CouchDB's `_replicate` answer: `ok`, `session_id`, `source_last_seq`, `history`.
    public func run() throws(ReplicationError) -> JSON {
        do {
            return try runSession()
        } catch {
            if isCancelled { throw .cancelled }
            if isStopping {
                checkpointBeforeStopping()
                throw .cancelled
            }
            throw error
        }
    }

    /// After `stop()`: records `completedSeq` unless the last checkpoint already did (best effort: a peer
    /// that is gone costs the work since the previous checkpoint, as before).
    private func checkpointBeforeStopping() {
        guard let completedSeq, !isCancelled else { return }
        let unrecorded = shared.withLock { $0.docsSinceCheckpoint > 0 || $0.wroteAnything }
        guard unrecorded || completedSeq != stats.checkpointedSeq else { return }
        try? checkpoint(completedSeq)
    }

    private func runSession() throws(ReplicationError) -> JSON {
        sessionStart = Date()
        _ = try databaseInfo(source, role: "source")
        try prepareTarget()
        try readCheckpoints()
        var seq = options.sinceSeq ?? startSeq
        completedSeq = seq
        update { $0.throughSeq = seq }
        update { $0.checkpointedSeq = seq }
        var caughtUp = false
        while true {
            if isCancelled { throw .cancelled }
            let longpoll = options.continuous && caughtUp
            let batch = try changes(since: seq, longpoll: longpoll)
            if !batch.rows.isEmpty {
                try replicate(batch.rows)
            }
            if let last = batch.lastSeq { seq = last }
            completedSeq = seq
            update {
                $0.throughSeq = seq
                $0.changesPending = batch.pending
            }
            let done = batch.rows.isEmpty || batch.pending == 0 || batch.rows.count < options.batchSize
            if done {
                caughtUp = true
                if !options.continuous { break }
                if shared.withLock({ $0.wroteAnything || $0.docsSinceCheckpoint > 0 }) { try checkpoint(seq) }
            } else if checkpointDue() {
                try checkpoint(seq)
            }
        }
        let nothingNew = seq == startSeq && stats.missingChecked == 0 && sourceLog != nil
        if !nothingNew || targetLog == nil { try checkpoint(seq) }
        var body: [(String, JSON)] = [("ok", true)]
        if nothingNew { body.append(("no_changes", true)) }
        body += [
            ("session_id", .string(sessionID)), ("source_last_seq", seq), ("replication_id_version", 4),
            ("history", .array(history(seq))),
        ]
        return .object(JSONObject(body))
    }

    private func checkpointDue() -> Bool {
        shared.withLock { $0.docsSinceCheckpoint } >= options.checkpointDocs
            || ContinuousClock.now - lastCheckpoint >= options.checkpointInterval
    }

    // MARK: - Databases

    func databaseInfo(_ endpoint: Endpoint, role: String) throws(ReplicationError) -> JSON {
        let response = try call(endpoint, endpoint.request("GET", "/"))
        if response.status == 404 {
            response.discard()
            throw .databaseNotFound(endpoint.redacted)
        }
        return try expect(response, endpoint, [200], "GET of the database")
    }

    private func prepareTarget() throws(ReplicationError) {
        let response = try call(target, target.request("GET", "/"))
        if response.status == 200 {
            response.discard()
            return
        }
        guard response.status == 404 else {
            _ = try expect(response, target, [200], "GET of the database")
            return
        }
        response.discard()
        guard options.createTarget else { throw .databaseNotFound(target.redacted) }
        let created = try call(target, target.request("PUT", ""))
        // 412: another replicator created it meanwhile.
        if created.status == 412 {
            created.discard()
        } else {
            _ = try expect(created, target, [201, 202], "PUT of the database")
        }
        _ = try databaseInfo(target, role: "target")
    }

    // MARK: - Requests

    /// Sends a request, retrying network errors and 5xx/408/429 with a doubling pause. With credentials it
    /// logs in first (`POST /_session`) and sends the cookie; a 401 on a cookie logs in again, once.
    func call(_ endpoint: Endpoint, _ request: ClientRequest, authenticate: Bool = true) throws(ReplicationError)
        -> ClientResponse
    {
        try checkStopping(endpoint)
        if authenticate { try startSession(endpoint) }
        var delay = options.retryDelay
        var attempt = 0
        var renewed = false
        while true {
            if isCancelled { throw .cancelled }
            try checkStopping(endpoint)
            do {
                let sent = authenticate ? authenticated(request, endpoint) : request
                let response = try endpoint.client.send(sent)
                if response.status == 401, authenticate, !renewed, request.isRepeatable,
                    let session = endpoint.session, case .cookie = session.current
                {
                    // The cookie expired (or the peer restarted with a new secret): log in again.
                    response.discard()
                    renewed = true
                    session.set(.notTried)
                    try startSession(endpoint)
                    continue
                }
                let retryable = response.status >= 500 || response.status == 408 || response.status == 429
                if !retryable || attempt >= options.retries || !request.isRepeatable { return response }
                response.discard()
            } catch {
                if isCancelled { throw .cancelled }
                try checkStopping(endpoint)
                if !error.isTransient || attempt >= options.retries || !request.isRepeatable { throw error }
            }
            attempt += 1
            try pause(delay)
            delay = delay * 2
        }
    }

    /// Sleeps, waking early to notice `cancel()`.
    func pause(_ duration: Duration) throws(ReplicationError) {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            if isCancelled { throw .cancelled }
            if shared.withLock({ $0.stopping && !$0.checkpointing }) { throw .cancelled }
            let left = end - ContinuousClock.now
            Thread.sleep(forTimeInterval: min(0.05, Double(left.milliseconds) / 1000))
        }
    }

    /// Reads a JSON answer whose status must be one of `accepted`, mapping the others to errors. The answer
    /// may have at most `limit` bytes (`ReplyLimit`), and must be an object unless `shape` says otherwise:
    /// a peer answering `[]`, a string or a flood is an error naming it, never read as "nothing to do".
    func expect(
        _ response: ClientResponse, _ endpoint: Endpoint, _ accepted: Set<Int>, _ what: String,
        limit: Int = ReplyLimit.small, shape: ReplyShape = .object
    ) throws(ReplicationError) -> JSON {
        if accepted.contains(response.status) {
            let reply = try response.json(limit: limit)
            switch (shape, reply) {
            case (.object, .object), (.array, .array), (.any, _): return reply
            case (.object, _): throw Self.wrongShape(endpoint, what, reply, "an object")
            case (.array, _): throw Self.wrongShape(endpoint, what, reply, "an array")
            }
        }
        let body = (try? response.json(limit: 1 << 20)) ?? .null
        let reason = body["reason"]?.stringValue ?? body["error"]?.stringValue ?? ""
        switch response.status {
        case 401: throw .unauthorized(endpoint.display)
        case 403: throw .forbidden(endpoint.display)
        case 301, 302, 303, 307, 308: throw .redirected(response.headers["Location"] ?? "?")
        case 404 where body["reason"]?.stringValue == "Database does not exist.":
            throw .databaseNotFound(endpoint.redacted)
        case 507: throw .insufficientStorage(endpoint.display)
        default:
            let lower = reason.lowercased()
            if body["error"]?.stringValue == "insufficient_storage" || lower.contains("no space left")
                || lower.contains("disk is full")
            {
                throw .insufficientStorage(endpoint.display)
            }
            throw .httpStatus(response.status, "\(endpoint.display): \(reason)")
        }
    }
}

/// The most bytes a peer's JSON reply may have, by what was asked (a reply over it is an error, read no
/// further). Each is parsed within `JSON.memoryBudget(forInput:)` of its size, as the server parses bodies.
enum ReplyLimit {
    /// Database information, checkpoints (`_local`, which the server caps at 1 MiB too), `_ensure_full_commit`,
    /// the answer to a write, error bodies.
    static let small = 1 << 20
    /// `_revs_diff` and `_bulk_docs` answers: a few ids and revisions per document of a batch.
    static let revsDiff = 16 << 20
    /// A batch of `_changes` rows (`style=all_docs`: every leaf revision of each document).
    static let changes = 32 << 20
    /// Documents: `_bulk_get`, a design document, `open_revs` parts.
    static let documents = 64 << 20
}

/// What a JSON reply must be.
enum ReplyShape {
    case object
    case array
    case any
}

extension Replication {
    /// `the server at http://host:port/db/ answered _revs_diff with an array, not an object`.
    static func wrongShape(_ endpoint: Endpoint, _ what: String, _ value: JSON, _ expected: String) -> ReplicationError
    {
        .protocolError("the server at \(endpoint.redacted) answered \(what) with \(kind(value)), not \(expected)")
    }

    package static func kind(_ value: JSON) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension ClientRequest {
    /// Whether the request can be sent again as is (a streamed body cannot).
    var isRepeatable: Bool {
        if case .stream = body { return false }
        return true
    }
}
