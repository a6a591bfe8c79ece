import CouchStore
import CouchWire

/// `GET /_db_updates` (server admins): `{"results":[{"db_name","type","seq"}…],"last_seq"}` for `feed=normal` and
/// `longpoll`, one line per event then `{"last_seq"}` for `continuous`, `data:`/`id:` events for `eventsource`,
/// with `since` (a seq or `now`), `limit`, `descending`, `timeout` and `heartbeat` as `_changes` takes them.
///
/// Rows are written as they are produced through the response's bounded writer: a client that stops reading blocks
/// this feed's thread on the socket, never makes the server buffer events (each database has one entry anyway).
struct DatabaseUpdatesFeed {
    enum Feed: String { case normal, longpoll, continuous, eventsource }

    let updates: DatabaseUpdates
    let stream: ResponseStream
    var feed = Feed.normal
    var since = 0
    var limit = Int.max
    var descending = false
    var heartbeat: Duration?
    var timeout = ChangesQuery.defaultTimeout
    private var emitted = 0
    private var lastSeq = 0
    private var out: FeedWriter

    /// The response: the feed is made and run as its body is written, so a bad parameter is still answered as a
    /// plain error (nothing was sent yet).
    static func response(_ request: Request, updates: DatabaseUpdates) -> Response {
        var headers = HTTPHeaders()
        if request.query["feed"] == Feed.eventsource.rawValue {
            headers.set("Content-Type", "text/event-stream")
            headers.set("Cache-Control", "no-cache")
        }
        return .stream(.ok, headers: headers) { stream in
            var feed = try DatabaseUpdatesFeed(request, stream, updates: updates)
            try feed.run()
        }
    }

    init(_ request: Request, _ stream: ResponseStream, updates: DatabaseUpdates) throws {
        self.updates = updates
        self.stream = stream
        out = FeedWriter(stream)
        let query = request.query
        if let text = query["feed"] {
            guard let parsed = Feed(rawValue: text) else {
                throw CouchError.badRequest("Supported `feed` types: normal, continuous, longpoll, eventsource")
            }
            feed = parsed
        }
        descending = query["descending"] == "true"
        // `global_changes_httpd`: integers that do not parse are `invalid_integer`; a heartbeat of 0 is none.
        limit = try Self.integer(query["limit"]) ?? Int.max
        timeout = try Self.integer(query["timeout"]).map { .milliseconds($0) } ?? ChangesQuery.defaultTimeout
        if query["heartbeat"] == "true" {
            heartbeat = .seconds(60)
        } else if let ms = try Self.integer(query["heartbeat"]), ms > 0 {
            heartbeat = .milliseconds(ms)
        }
        if let text = query["since"] {
            since = text == "now" ? updates.lastSeq : try updates.seqs.after(text, lastSeq: updates.lastSeq)
        }
        lastSeq = since
    }

    private static func integer(_ text: String?) throws(CouchError) -> Int? {
        guard let text else { return nil }
        guard let n = Int(text), n >= 0 else { throw .badRequest("invalid_integer") }
        return n
    }

    mutating func run() throws {
        if feed == .normal || feed == .longpoll { try out.append("{\"results\":[\n") }
        try scan()
        let deadline = heartbeat == nil ? ContinuousClock.now + timeout : nil
        if feed != .normal {
            while emitted < limit && !descending && (feed != .longpoll || emitted == 0) {
                guard try waitForEvents(until: deadline) else { break }
                try scan()
            }
        }
        try end()
    }

    /// Writes the events after `lastSeq`, up to the limit, a page at a time (first flushing what is pending, so
    /// the client sees every event that happened before it asked).
    private mutating func scan() throws {
        // A failed flush (a full disk) leaves its events pending; what is on disk is still read.
        try? updates.log.flush()
        let after = descending ? since : lastSeq
        try updates.log.forEach(after: after, descending: descending, limit: limit - emitted) { try emit($0) }
        try out.send()
    }

    private mutating func emit(_ event: DatabaseUpdates.Event) throws {
        let row = JSON.object(
            JSONObject([
                ("db_name", .string(event.name)), ("type", .string(event.kind.rawValue)),
                ("seq", .string(updates.seqs.format(event.seq))),
            ]))
        switch feed {
        case .normal, .longpoll:
            if emitted > 0 { try out.append(",\n") }
            try out.append(row.serialized())
        case .continuous:
            try out.append(row.serialized() + [UInt8(ascii: "\n")])
        case .eventsource:
            var text = Array("data: ".utf8) + row.serialized() + Array("\nid: ".utf8)
            JSON.string(updates.seqs.format(event.seq)).serialize(into: &text)
            try out.append(text + Array("\n\n".utf8))
        }
        emitted += 1
        // As CouchDB's: `last_seq` is the seq of the last row written (of the oldest one, descending).
        lastSeq = event.seq
    }

    private mutating func end() throws {
        var tail: [UInt8]
        switch feed {
        case .normal, .longpoll:
            tail = Array("\n],\n\"last_seq\":".utf8)
            JSON.string(updates.seqs.format(lastSeq)).serialize(into: &tail)
            tail += Array("}\n".utf8)
        case .continuous:
            tail = Array("{\"last_seq\":".utf8)
            JSON.string(updates.seqs.format(lastSeq)).serialize(into: &tail)
            tail += Array("}\n".utf8)
        case .eventsource:
            tail = []
        }
        try out.append(tail)
        try out.send()
    }

    /// Waits for an event after `lastSeq`, sending heartbeats and watching for the client leaving.
    /// - Returns: false when the feed should end (timeout, client gone).
    private func waitForEvents(until deadline: ContinuousClock.Instant?) throws -> Bool {
        let wait = LiveFeedWait(out: stream, heartbeat: heartbeat, eventsource: feed == .eventsource)
        return try wait.wait(until: deadline) { slice in updates.log.wait(after: lastSeq, timeout: slice) > lastSeq }
    }
}
