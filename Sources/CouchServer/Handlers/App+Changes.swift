import CouchWire
import Foundation
import RevTree

/// The parameters of one `_changes` request.
struct ChangesQuery {
    enum Feed: String { case normal, longpoll, continuous, eventsource }
    enum Filter {
        case none
        case docIDs(Set<String>)
        case selector(Selector)
        case design
    }

    var feed = Feed.normal
    var since = 0
    var limit: Int?
    var descending = false
    var allDocsStyle = false
    var includeDocs = false
    var render = RenderOptions()
    var heartbeat: Duration?
    var timeout: Duration
    var seqInterval: Int?
    var filter = Filter.none

    /// Default wait of a live feed with no heartbeat (CouchDB's `changes_timeout`, 60 s).
    static let defaultTimeout = Duration.seconds(60)
    /// How often a waiting feed checks that its client is still there.
    static let livenessInterval = Duration.seconds(1)

    init(_ request: Request, database: Database) throws {
        let query = request.query
        switch query["feed"] ?? "normal" {
        case "normal": feed = .normal
        case "longpoll": feed = .longpoll
        case "continuous", "live": feed = .continuous
        case "eventsource": feed = .eventsource
        case let other:
            throw CouchError.badRequest(
                "Supported `feed` types: normal, continuous, live, longpoll, eventsource (got \(other))")
        }
        if let sinceText = query["since"] {
            if sinceText == "now" {
                since = database.updateSeq
            } else if let seq = Seq.parse(sinceText.trimmingCharacters(in: "\"")) {
                since = seq
            } else {
                throw CouchError.badRequest("Malformed sequence supplied in 'since' parameter.")
            }
        }
        limit = try query.int("limit")
        descending = try query.bool("descending")
        switch query["style"] ?? "main_only" {
        case "main_only": allDocsStyle = false
        case "all_docs": allDocsStyle = true
        default: throw CouchError.badRequest("Supported `style` values: main_only, all_docs")
        }
        includeDocs = try query.bool("include_docs")
        render.conflicts = try query.bool("conflicts")
        render.attachments = try query.bool("attachments")
        render.attEncodingInfo = try query.bool("att_encoding_info")
        if let beat = query["heartbeat"] {
            if beat == "true" {
                heartbeat = .seconds(60)
            } else if let ms = Int(beat), ms > 0 {
                heartbeat = .milliseconds(ms)
            } else if beat != "false" {
                throw CouchError.badRequest("Invalid heartbeat value. Expecting a positive integer value (in ms).")
            }
        }
        timeout = ChangesQuery.defaultTimeout
        if let ms = try query.int("timeout") { timeout = .milliseconds(ms) }
        if let interval = try query.int("seq_interval"), interval > 0 { seqInterval = interval }

        let body: JSONObject? =
            request.method == "POST" && request.body.hasBody
            ? try request.jsonObjectBody(limit: Limits.bulkRequestBytes) : nil
        switch query["filter"] {
        case nil:
            break
        case "_doc_ids":
            let ids = try body?["doc_ids"] ?? query.json("doc_ids")
            guard let array = ids?.arrayValue else {
                throw CouchError.badRequest("`doc_ids` filter parameter is not a list of doc ids.")
            }
            filter = .docIDs(Set(array.compactMap(\.stringValue)))
        case "_selector":
            guard let selectorJSON = body?["selector"] else {
                throw CouchError.badRequest("Selector must be specified in POST payload")
            }
            do {
                filter = .selector(try Selector(selectorJSON))
            } catch {
                throw CouchError.badRequest(error.reason)
            }
        case "_design":
            filter = .design
        case "_view":
            throw CouchError.badRequest("couchlite does not execute views; filter=_view is not supported")
        case let name?:
            // `ddoc/filter` names a design document function: 404 when the design document is
            // missing (as CouchDB), else 400 because couchlite runs no JavaScript.
            let parts = name.split(separator: "/", maxSplits: 1)
            guard parts.count == 2 else {
                throw CouchError.badRequest("`filter` must be of the form `designname/filtername`")
            }
            guard let ddoc = try database.document("_design/" + parts[0]), !ddoc.deleted else {
                throw CouchError.notFound("missing")
            }
            throw CouchError.badRequest("couchlite does not execute filter functions; filter=\(name) is not supported")
        }
    }
}

/// `GET/POST /db/_changes` with every feed type.
extension App {
    func changes(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD", "POST")
        let query = try ChangesQuery(request, database: database)
        var feed = ChangesFeed(app: self, database: database, query: query, reply: reply)
        try feed.run()
    }
}

/// Streams one `_changes` response.
struct ChangesFeed {
    let app: App
    let database: Database
    let query: ChangesQuery
    let reply: Reply
    private var lastSeq: Int
    private var emitted = 0
    /// Whether a scan stopped at the limit with rows left unread; only then is `pending` non-zero.
    private var stoppedAtLimit = false

    init(app: App, database: Database, query: ChangesQuery, reply: Reply) {
        self.app = app
        self.database = database
        self.query = query
        self.reply = reply
        self.lastSeq = query.since
    }

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
            while !limitReached {
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
        if query.feed == .eventsource { headers.set("Content-Type", "text/event-stream") }
        try reply.begin(200, headers: headers)
        if query.feed == .normal || query.feed == .longpoll { try reply.write("{\"results\":[\n") }
    }

    private mutating func end() throws {
        let pending = try pendingCount()
        switch query.feed {
        case .normal, .longpoll:
            var tail: [UInt8] = Array((emitted > 0 ? "\n" : "").utf8)
            tail += Array("],\n\"last_seq\":".utf8)
            Seq.json(lastSeq).serialize(into: &tail)
            tail += Array(",\"pending\":\(pending)}\n".utf8)
            try reply.write(tail)
        case .continuous:
            var line: [UInt8] = Array("{\"last_seq\":".utf8)
            Seq.json(lastSeq).serialize(into: &line)
            line += Array(",\"pending\":\(pending)}\n".utf8)
            try reply.write(line)
        case .eventsource:
            break
        }
        try reply.finish()
    }

    /// Rows after `last_seq` in the snapshot the feed read. A scan that was not cut short by the
    /// limit read everything, so only a limited feed pays for counting (2,000 woken feeds must not
    /// each run an extra query).
    private func pendingCount() throws -> Int {
        guard !query.descending, stoppedAtLimit else { return 0 }
        return try database.changeCount(since: lastSeq)
    }

    // MARK: Rows

    /// Change rows read per store call. Rows are read first and rendered afterwards, so rendering a
    /// document (`include_docs`, selectors) never nests a second read inside the first: the store's
    /// bounded reader pool must not be asked for a connection by a thread that already holds one.
    static let pageSize = 500

    /// Emits every matching change after `lastSeq`, up to the limit.
    private mutating func scan() throws {
        guard !limitReached else { return }
        var rows: [(seq: Int, row: JSONObject)] = []
        let remaining = query.limit.map { $0 - emitted }
        var cursor = lastSeq
        pages: while true {
            var page: [ChangeRow] = []
            // Descending feeds are rare and start from the top: one read of every row.
            let pageLimit = query.descending ? nil : ChangesFeed.pageSize
            try database.changes(since: query.descending ? 0 : cursor, limit: pageLimit, descending: query.descending) {
                page.append($0)
                return true
            }
            for change in page {
                if let remaining, rows.count >= remaining {
                    stoppedAtLimit = true
                    break pages
                }
                if !query.descending { lastSeq = change.seq } else if rows.isEmpty { lastSeq = change.seq }
                if let row = try makeRow(change) { rows.append((change.seq, row)) }
            }
            guard let last = page.last, let pageLimit, page.count == pageLimit else { break }
            cursor = last.seq
        }
        if query.descending, let last = rows.last { lastSeq = last.seq }
        for (seq, row) in rows { try write(row, seq: seq) }
        try reply.flush()
    }

    private func makeRow(_ change: ChangeRow) throws -> JSONObject? {
        var doc: JSONObject?
        switch query.filter {
        case .none: break
        case .docIDs(let ids): guard ids.contains(change.id) else { return nil }
        case .design: guard change.id.hasBytePrefix("_design/") else { return nil }
        case .selector(let selector):
            doc = try renderWinner(change)
            guard let doc, selector.matches(.object(doc)) else { return nil }
        }
        var row = JSONObject()
        row["seq"] = Seq.json(change.seq)
        row["id"] = .string(change.id)
        let revs = query.allDocsStyle ? change.leaves.map(\.rev) : [change.winner]
        row["changes"] = .array(revs.map { ["rev": .string($0.description)] })
        if change.deleted { row["deleted"] = true }
        if query.includeDocs {
            row["doc"] = try (doc ?? renderWinner(change)).map(JSON.object) ?? .null
        }
        return row
    }

    private func renderWinner(_ change: ChangeRow) throws -> JSONObject? {
        guard let revision = try database.revision(change.id, rev: nil) else { return nil }
        let info = query.render.conflicts ? try database.document(change.id) : nil
        let renderer = DocumentRenderer(
            id: change.id, info: info, options: query.render, loadAttachment: app.attachmentLoader(database))
        return try renderer.render(revision)
    }

    private mutating func write(_ row: JSONObject, seq: Int) throws {
        var row = row
        if let interval = query.seqInterval, (emitted + 1) % interval != 0 { row["seq"] = .null }
        var bytes: [UInt8] = []
        switch query.feed {
        case .normal, .longpoll:
            if emitted > 0 { bytes += Array(",\n".utf8) }
            JSON.object(row).serialize(into: &bytes)
        case .continuous:
            JSON.object(row).serialize(into: &bytes)
            bytes.append(UInt8(ascii: "\n"))
        case .eventsource:
            bytes += Array("data: ".utf8)
            JSON.object(row).serialize(into: &bytes)
            bytes += Array("\nid: \(seq)\n\n".utf8)
        }
        emitted += 1
        try reply.write(bytes)
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
