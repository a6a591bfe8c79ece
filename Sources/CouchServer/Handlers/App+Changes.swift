import CouchWire
import Foundation
import RevTree

/// `GET/POST /db/_changes` with every feed type.
extension App {
    func changes(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD", "POST")
        if request.method == "POST" { try requireJSONContent(request) }
        let query = try ChangesQuery(request, database: database)
        var feed = ChangesFeed(app: self, database: database, query: query, reply: reply)
        // CouchDB's `clients_requesting_changes`: feeds that wait, from the network (the replicator's
        // in-process connections carry no client address).
        let counted = query.feed != .normal && request.head.remoteAddress != nil
        if counted { metrics.changesFeedOpened() }
        defer { if counted { metrics.changesFeedClosed() } }
        try feed.run()
    }
}

/// Streams one `_changes` response: rows are read a page at a time and each is rendered and sent before the next
/// page is read, so memory stays flat whatever the feed's length (issue 18 item 9).
struct ChangesFeed {
    let app: App
    let database: Database
    let query: ChangesQuery
    private var out: FeedWriter
    private var lastSeq: Int
    private var emitted = 0
    /// Whether a scan stopped at the limit with rows left unread; only then is `pending` non-zero.
    private var stoppedAtLimit = false
    /// The next descending page reads rows below this seq.
    private var descendingCursor = Int.max

    init(app: App, database: Database, query: ChangesQuery, reply: Reply) {
        self.app = app
        self.database = database
        self.query = query
        self.out = FeedWriter(reply: reply)
        self.lastSeq = query.since
    }

    var reply: Reply { out.reply }

    mutating func run() throws {
        try begin()
        try scan()
        // A heartbeat keeps a live feed open indefinitely; otherwise it ends at the timeout.
        let deadline = query.heartbeat == nil ? ContinuousClock.now + query.timeout : nil
        switch query.feed {
        case .normal:
            break
        case .longpoll:
            while emitted == 0 && !query.descending && !limitReached {
                guard try waitForChanges(until: deadline) else { break }
                try scan()
            }
        case .continuous, .eventsource:
            while !limitReached && !query.descending {
                guard try waitForChanges(until: deadline) else { break }
                try scan()
            }
        }
        try end()
    }

    private var limitReached: Bool {
        if let limit = query.limit { return emitted >= limit }
        return false
    }

    // MARK: Framing

    private mutating func begin() throws {
        var headers = HTTPHeaders()
        if query.feed == .eventsource {
            headers.set("Content-Type", "text/event-stream")
            headers.set("Cache-Control", "no-cache")
        }
        try reply.begin(200, headers: headers)
        if query.feed == .normal || query.feed == .longpoll { try out.append("{\"results\":[\n") }
    }

    private mutating func end() throws {
        let pending = try pendingCount()
        switch query.feed {
        case .normal, .longpoll:
            var tail: [UInt8] = Array("\n],\n\"last_seq\":".utf8)
            Seq.json(lastSeq).serialize(into: &tail)
            tail += Array(",\"pending\":\(pending)}\n".utf8)
            try out.append(tail)
        case .continuous:
            var line: [UInt8] = Array("{\"last_seq\":".utf8)
            Seq.json(lastSeq).serialize(into: &line)
            line += Array(",\"pending\":\(pending)}\n".utf8)
            try out.append(line)
        case .eventsource:
            break
        }
        try out.append("\n")  // CouchDB ends every streamed JSON response with one more newline
        try out.send()
        try reply.finish()
    }

    /// Rows after `last_seq` in the snapshot the feed read. A scan that was not cut short by the
    /// limit read everything, so only a limited feed pays for counting (2,000 woken feeds must not
    /// each run an extra query). `limit=0` reads nothing and counts everything, as CouchDB.
    private func pendingCount() throws -> Int {
        guard !query.descending, stoppedAtLimit || query.limit == 0 else { return 0 }
        return try database.changeCount(since: lastSeq)
    }

    // MARK: Rows

    /// Change rows read per store call. A page is read first and its rows rendered afterwards, so rendering a
    /// document (`include_docs`, selectors) never nests a second read inside the first: the store's bounded
    /// reader pool must not be asked for a connection by a thread that already holds one.
    static let pageSize = 500

    /// Emits every matching change after `lastSeq` (descending: every change, highest first), up to the limit.
    private mutating func scan() throws {
        guard !limitReached else { return }
        pages: while true {
            var page: [ChangeRow] = []
            let collect: (ChangeRow) -> Bool = {
                page.append($0)
                return true
            }
            if query.descending {
                try database.changes(before: descendingCursor, limit: ChangesFeed.pageSize, collect)
            } else {
                try database.changes(since: lastSeq, limit: ChangesFeed.pageSize, descending: false, collect)
            }
            for change in page {
                if limitReached {
                    stoppedAtLimit = true
                    break pages
                }
                // Like CouchDB's shard counters, `last_seq` follows every row read, filtered out or not.
                lastSeq = change.seq
                descendingCursor = change.seq
                try emit(change)
            }
            guard page.count == ChangesFeed.pageSize else { break }
        }
        try out.flush()
    }

    private mutating func emit(_ change: ChangeRow) throws {
        var doc: (rendered: JSONObject, inline: [AttachmentInfo])?
        switch query.filter {
        case .none: break
        case .docIDs(let ids): guard ids.contains(change.id) else { return }
        case .design: guard change.id.hasBytePrefix("_design/") else { return }
        case .selector(let selector):
            doc = try renderWinner(change)
            guard let doc, selector.matches(.object(doc.rendered)) else { return }
        }
        if query.includeDocs, doc == nil { doc = try renderWinner(change) }
        var row = JSONObject()
        row["seq"] = carriesSeq ? Seq.json(change.seq) : .null
        row["id"] = .string(change.id)
        let revs = query.allDocsStyle ? change.leaves.map(\.rev) : [change.winner]
        row["changes"] = .array(revs.map { ["rev": .string($0.description)] })
        if change.deleted { row["deleted"] = true }
        switch query.feed {
        case .normal, .longpoll:
            if emitted > 0 { try out.append(",\r\n") }
            try out.appendRow(row, doc: query.includeDocs ? doc : nil, app: app, database: database)
        case .continuous:
            try out.appendRow(row, doc: query.includeDocs ? doc : nil, app: app, database: database)
            try out.append("\n")
        case .eventsource:
            try out.append("data: ")
            try out.appendRow(row, doc: query.includeDocs ? doc : nil, app: app, database: database)
            // CouchDB sends the row's seq JSON-encoded (`id: "3-…"`, `id: null` between intervals).
            try out.append("\nid: " + (row["seq"] ?? .null).serializedString + "\n\n")
        }
        emitted += 1
    }

    /// Whether the next row carries its `seq` under `seq_interval`: CouchDB's collector sends one when the
    /// limit still to go (`#changes_args.limit`, 10^15 by default, less one per row sent) is a multiple of the
    /// interval (`fabric_view_changes:handle_message`), so with no limit the first seq is not always row 1.
    private var carriesSeq: Bool {
        guard let interval = query.seqInterval else { return true }
        let remaining = query.seqCountdown - emitted
        return remaining % interval == 0
    }

    private func renderWinner(_ change: ChangeRow) throws -> (rendered: JSONObject, inline: [AttachmentInfo])? {
        guard let revision = try database.revision(change.id, rev: nil) else { return nil }
        let info = query.render.conflicts ? try database.document(change.id) : nil
        return try app.feedDocument(revision, id: change.id, info: info, options: query.render)
    }

    // MARK: Waiting

    /// Waits for a commit past `lastSeq`, sending heartbeats and watching for the client leaving.
    /// - Returns: false when the feed should end (timeout or client gone).
    private func waitForChanges(until deadline: ContinuousClock.Instant?) throws -> Bool {
        var nextBeat = query.heartbeat.map { ContinuousClock.now + $0 }
        while true {
            let now = ContinuousClock.now
            if let deadline, now >= deadline { return false }
            var slice = ChangesQuery.livenessInterval
            if let deadline { slice = min(slice, deadline - now) }
            if let nextBeat { slice = min(slice, max(nextBeat - now, .zero)) }
            let seq = database.waitForChange(after: lastSeq, timeout: slice)
            if seq > lastSeq { return true }
            if reply.writer.isPeerClosed() { return false }
            if let beat = query.heartbeat, let due = nextBeat, ContinuousClock.now >= due {
                try reply.write(query.feed == .eventsource ? "event: heartbeat\ndata: \n\n" : "\n")
                try reply.flush()
                nextBeat = ContinuousClock.now + beat
            }
        }
    }
}
