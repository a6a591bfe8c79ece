import CouchQuery
import CouchStore
import CouchWire
import Foundation
import QueryServer
import RevTree

/// Streams one `_changes` response: rows are read a page at a time and each is rendered and sent before the next
/// page is read, so memory stays flat whatever the feed's length.
struct ChangesFeed {
    package let database: Database
    package let query: ChangesQuery
    private var out: FeedWriter
    private var lastSeq: Int
    private var emitted = 0
    /// Whether a scan stopped at the limit with rows left unread; only then is `pending` non-zero.
    private var stoppedAtLimit = false
    /// The next descending page reads rows below this seq.
    private var descendingCursor = Int.max
    /// Maps the documents of `filter=_view`.
    private let engine: any ViewEngine
    /// Runs the filter functions of `filter=ddoc/name`.
    private let queryServer: QueryServer
    /// Streams the inline attachments of `include_docs&attachments=true`.
    private let blobs: BlobRegistry
    /// `req` for a JavaScript filter (`filter=ddoc/name`).
    var filterRequest: JSON = .null
    /// CPU time the `$regex` matches of a `filter=_selector` may take in one catch-up (``scan``): the first, and
    /// each after a live feed's wait, gets its own.
    var regexBudgetNanoseconds = RegexBudget.defaultNanoseconds
    private var regexBudget: RegexBudget?
    /// When the scan last looked whether its client is still there.
    private var lookedAt: ContinuousClock.Instant?
    /// Whether the body's opening has been written. The response head waits for it (`ResponseStream`), so that a
    /// filter that fails on the first page is answered with its error status, as CouchDB answers it.
    private var begun = false
    /// Where the feed is written.
    private let stream: ResponseStream

    init(
        database: Database, query: ChangesQuery, stream: ResponseStream, engine: any ViewEngine,
        queryServer: QueryServer,
        blobs: BlobRegistry
    ) {
        self.database = database
        self.engine = engine
        self.queryServer = queryServer
        self.blobs = blobs
        self.query = query
        self.stream = stream
        self.out = FeedWriter(stream)
        self.lastSeq = query.since
    }

    /// The head of the feed's response: an eventsource feed is `text/event-stream`.
    static func headers(_ query: ChangesQuery) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if query.feed == .eventsource {
            headers.set("Content-Type", "text/event-stream")
            headers.set("Cache-Control", "no-cache")
        }
        return headers
    }

    package mutating func run() throws {
        try scan()
        try begin()
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
        guard !begun else { return }
        begun = true
        if query.feed == .normal || query.feed == .longpoll { try out.append("{\"results\":[\n") }
    }

    private mutating func end() throws {
        try begin()
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
        regexBudget = RegexBudget(nanoseconds: regexBudgetNanoseconds)
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
            let passing = try pageFilter(page)
            for (index, change) in page.enumerated() {
                if limitReached {
                    stoppedAtLimit = true
                    break pages
                }
                // A client that left (or a stop that cut the connection) ends a long catch-up between rows.
                let now = ContinuousClock.now
                if lookedAt.map({ now - $0 >= MangoCursor.livenessInterval }) ?? true {
                    lookedAt = now
                    if stream.isPeerClosed() { throw HTTPError.clientGone }
                }
                // Like CouchDB's shard counters, `last_seq` follows every row read, filtered out or not.
                lastSeq = change.seq
                descendingCursor = change.seq
                if let passing {
                    guard !passing[index].isEmpty else { continue }
                    try emit(change, revs: passing[index])
                } else {
                    try emit(change)
                }
            }
            guard page.count == ChangesFeed.pageSize else { break }
        }
        if begun { try out.flush() }
    }

    /// The passing revisions of each row of `page` for the filters that run JavaScript over a whole page at once;
    /// nil for the others, decided row by row in `emit`.
    private func pageFilter(_ page: [ChangeRow]) throws -> [[RevID]]? {
        switch query.filter {
        case .function: return try functionFilter(page)
        case .view(let group, let number): return try viewFilter(page, group, number)
        default: return nil
        }
    }

    /// `filter=_view` (`couch_query_servers:filter_view`): a revision passes when the view's map function emits
    /// anything for it (deleted revisions are mapped too, as `{_id,_rev,_deleted}`); the whole page is mapped in
    /// one call to the engine.
    private func viewFilter(_ page: [ChangeRow], _ group: ViewGroup, _ number: Int) throws -> [[RevID]] {
        var docs: [JSON] = []
        var owners: [(row: Int, rev: RevID)] = []
        var options = RenderOptions()
        options.revs = true
        for (index, change) in page.enumerated() {
            let revisions: [StoredRevision] =
                query.allDocsStyle
                ? try database.leafRevisions(change.id)
                : (try database.revision(change.id, rev: nil)).map { [$0] } ?? []
            for revision in revisions {
                let renderer = DocumentRenderer(id: change.id, info: nil, options: options, inline: nil)
                docs.append(.object(try renderer.render(revision)))
                owners.append((index, revision.rev))
            }
        }
        var passing = [[RevID]](repeating: [], count: page.count)
        guard !docs.isEmpty else { return passing }
        let emits = try engine.map(group, docs)
        for (offset, perView) in emits.enumerated() where offset < owners.count {
            guard number < perView.count, !perView[number].isEmpty else { continue }
            passing[owners[offset].row].append(owners[offset].rev)
        }
        return passing
    }

    /// For `filter=ddoc/name`, the revisions of each row of `page` that pass, one call to the query server for
    /// the whole page (`couch_changes:filter` sends a document's leaves with `style=all_docs`, its winner
    /// otherwise); nil for any other filter.
    private func functionFilter(_ page: [ChangeRow]) throws -> [[RevID]]? {
        guard case .function(let ddoc, let name) = query.filter else { return nil }
        guard !page.isEmpty else { return [] }
        var docs: [[UInt8]] = []
        var owners: [(row: Int, rev: RevID)] = []
        var options = RenderOptions()
        options.revs = true
        let winners = query.allDocsStyle ? [] : try database.winningRevisions(page.map(\.id))
        for (index, change) in page.enumerated() {
            let revisions: [StoredRevision] =
                query.allDocsStyle ? try database.leafRevisions(change.id) : winners[index].map { [$0] } ?? []
            let renderer = DocumentRenderer(id: change.id, info: nil, options: options, inline: nil)
            for revision in revisions {
                docs.append(try FilterDocument.serialized(id: change.id, revision, renderer: renderer))
                owners.append((index, revision.rev))
            }
        }
        let verdicts: [Bool]
        do {
            verdicts = try queryServer.filter(ddoc, name: name, serializedDocs: docs, request: filterRequest)
        } catch {
            throw CouchError(error)
        }
        var passing = [[RevID]](repeating: [], count: page.count)
        for (offset, verdict) in verdicts.enumerated() where verdict && offset < owners.count {
            passing[owners[offset].row].append(owners[offset].rev)
        }
        return passing
    }

    private mutating func emit(_ change: ChangeRow, revs filtered: [RevID]? = nil) throws {
        var doc: (rendered: JSONObject, inline: [AttachmentInfo])?
        switch query.filter {
        case .none, .function, .view: break
        case .docIDs(let ids): guard ids.contains(change.id) else { return }
        case .design: guard change.id.hasBytePrefix("_design/") else { return }
        case .selector(let selector):
            doc = try renderWinner(change)
            let matched = doc.map { selector.matches(.object($0.rendered), budget: regexBudget) } ?? false
            if let regexBudget, regexBudget.isSpent { throw MangoCursor.regexBudgetSpent(regexBudget) }
            guard matched else { return }
        }
        if query.includeDocs, doc == nil { doc = try renderWinner(change) }
        try begin()
        var row = JSONObject()
        row["seq"] = carriesSeq ? Seq.json(change.seq) : .null
        row["id"] = .string(change.id)
        let revs = filtered ?? (query.allDocsStyle ? change.leaves.map(\.rev) : [change.winner])
        row["changes"] = .array(revs.map { ["rev": .string($0.description)] })
        if change.deleted { row["deleted"] = true }
        switch query.feed {
        case .normal, .longpoll:
            if emitted > 0 { try out.append(",\r\n") }
            try out.appendRow(row, doc: query.includeDocs ? doc : nil, database: database, blobs: blobs)
        case .continuous:
            try out.appendRow(row, doc: query.includeDocs ? doc : nil, database: database, blobs: blobs)
            try out.append("\n")
        case .eventsource:
            try out.append("data: ")
            try out.appendRow(row, doc: query.includeDocs ? doc : nil, database: database, blobs: blobs)
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
        return try FeedWriter.document(revision, id: change.id, info: info, options: query.render)
    }

    // MARK: Waiting

    /// Waits for a commit past `lastSeq`, sending heartbeats and watching for the client leaving.
    /// - Returns: false when the feed should end (timeout, client gone, database deleted: nothing will come, so
    ///   the feed ends now rather than at its timeout).
    private func waitForChanges(until deadline: ContinuousClock.Instant?) throws -> Bool {
        let wait = LiveFeedWait(out: stream, heartbeat: query.heartbeat, eventsource: query.feed == .eventsource)
        return try wait.wait(until: deadline, ended: { database.isShutDown }) { slice in
            database.waitForChange(after: lastSeq, timeout: slice) > lastSeq
        }
    }
}
