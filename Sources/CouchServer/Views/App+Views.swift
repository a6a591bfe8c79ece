import CouchWire
import Foundation
import RevTree

/// `GET/POST /db/_design/d/_view/v`: the index is brought up to date (unless `update=false`/`stale`), then rows
/// are read a page at a time and sent as they are rendered, so a query over a million rows holds one page.
/// Map output is CouchDB's `{"total_rows","offset","rows":[{"id","key","value","doc"?}]}`; reduce output
/// `{"rows":[{"key","value"}]}`, grouped by `group`/`group_level`.
extension App {
    /// Rows read per index call.
    static let viewPageSize = 500

    func designView(_ database: Database, design: String, view name: String, _ request: Request, _ reply: Reply)
        throws
    {
        try require(request, "GET", "HEAD", "POST")
        let group = try designGroup(database, design: design)
        guard let (number, definition) = group.view(named: name) else {
            throw CouchError.notFound("missing_named_view")
        }
        let query = try ViewQuery(request)
        let reduces = try query.validate(isReduceView: definition.reduce != nil)
        if let reduce = definition.reduce, reduce.hasPrefix("_"), definition.builtin == nil {
            throw CouchError.badRequest("Unknown builtin reduce function: \(reduce)")
        }
        let index = try views.index(database, group)
        let engine = views.engine
        if query.update == .yes { try index.update(database, engine: engine, to: database.updateSeq) }
        var output = ViewOutput(reply: reply)
        if reduces {
            try reduceRows(index, number, definition, query, engine, &output)
        } else {
            try mapRows(index, number, query, database, &output)
        }
        if query.update == .lazy {
            let target = database.updateSeq
            Thread.detachNewThread { try? index.update(database, engine: engine, to: target) }
        }
    }

    /// The views of `_design/<design>`; 404 `missing` (as CouchDB) when it does not exist or is deleted.
    func designGroup(_ database: Database, design: String) throws -> ViewGroup {
        try ViewGroup.load(database, design: design)
    }
}

extension ViewGroup {
    /// The views of `_design/<design>`; 404 `missing` (as CouchDB) when it does not exist or is deleted.
    static func load(_ database: Database, design: String) throws -> ViewGroup {
        let id = "_design/" + design
        guard let info = try database.document(id), !info.deleted, let revision = try database.revision(id, rev: nil),
            let body = revision.body, let document = try? JSON.parse(body)
        else { throw CouchError.notFound("missing") }
        return try ViewGroup(designID: id, document: document)
    }
}

extension App {
    // MARK: Map

    private func mapRows(
        _ index: ViewIndex, _ view: Int, _ query: ViewQuery, _ database: Database, _ output: inout ViewOutput
    ) throws {
        let total = try index.file.rowCount(view: view)
        let firstScan = query.scan(view: view, key: query.keys?.first)
        let before = try index.file.rowsBefore(firstScan)
        var head: [UInt8] = Array("{\"total_rows\":\(total),\"offset\":\(min(before + query.skip, total))".utf8)
        if query.updateSeq { appendUpdateSeq(index, &head) }
        head += Array(",\"rows\":[\r\n".utf8)
        try output.start(head)
        var skip = query.skip
        var remaining = query.limit ?? Int.max
        let scans = query.keys.map { keys in keys.map { query.scan(view: view, key: $0) } } ?? [firstScan]
        for scan in scans where remaining > 0 {
            var cursor: ViewRow?
            while remaining > 0 {
                // No more rows than the answer can still use (`limit=1` reads one row, not a page).
                let size =
                    remaining >= App.viewPageSize || skip >= App.viewPageSize
                    ? App.viewPageSize : min(App.viewPageSize, remaining + skip)
                var page: [ViewRow] = []
                try index.file.rows(scan, after: cursor, limit: size) { row in
                    page.append(row)
                    return true
                }
                for row in page {
                    if skip > 0 {
                        skip -= 1
                        continue
                    }
                    guard remaining > 0 else { break }
                    remaining -= 1
                    try output.row(try mapRow(row, query, database))
                }
                guard let last = page.last, page.count == size else { break }
                cursor = last
            }
        }
        try output.finish()
    }

    /// One `{"id","key","value"}` row, with `doc` for `include_docs` (the emitting document, or the one a value
    /// `{"_id":…}` links to; null when it is missing or deleted).
    private func mapRow(_ row: ViewRow, _ query: ViewQuery, _ database: Database) throws -> [UInt8] {
        var bytes: [UInt8] = Array("{\"id\":".utf8)
        JSON.appendQuoted(row.docID, to: &bytes)
        bytes += Array(",\"key\":".utf8)
        bytes += row.key
        bytes += Array(",\"value\":".utf8)
        bytes += row.value
        if query.includeDocs {
            bytes += Array(",\"doc\":".utf8)
            var id = row.docID
            var rev: RevID?
            if row.value.first == UInt8(ascii: "{"), let value = try? JSON.parse(row.value),
                let linked = value["_id"]?.stringValue
            {
                id = linked
                rev = value["_rev"]?.stringValue.flatMap { try? DocumentInput.parseRev($0) }
            }
            var options = query.render
            options.conflicts = query.conflicts == true
            // Attachment bodies are not inlined into view rows: they stay stubs (`attachments=true` is accepted).
            options.attachments = false
            if let info = try database.document(id), rev != nil || !info.deleted,
                let revision = try database.revision(id, rev: rev), !revision.deleted
            {
                let renderer = DocumentRenderer(id: id, info: info, options: options, inline: nil)
                JSON.object(try renderer.render(revision)).serialize(into: &bytes)
            } else {
                bytes += Array("null".utf8)
            }
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private func appendUpdateSeq(_ index: ViewIndex, _ head: inout [UInt8]) {
        head += Array(",\"update_seq\":".utf8)
        Seq.json(index.file.updateSeq).serialize(into: &head)
    }

    // MARK: Reduce

    private func reduceRows(
        _ index: ViewIndex, _ view: Int, _ definition: ViewDefinition, _ query: ViewQuery, _ engine: any ViewEngine,
        _ output: inout ViewOutput
    ) throws {
        var head: [UInt8] = Array("{".utf8)
        if query.updateSeq {
            appendUpdateSeq(index, &head)
            head.remove(at: 1)  // the comma `appendUpdateSeq` puts first
            head += Array(",".utf8)
        }
        head += Array("\"rows\":[\r\n".utf8)
        output.defer(head)
        let level = try query.groupLevel()
        var skip = query.skip
        var remaining = query.limit ?? Int.max
        var reduction = Reduction(definition: definition, group: index.group, view: view, engine: engine)
        let needsKey = level != .none || definition.builtin == nil || definition.builtin == .approxCountDistinct
        var groupKey: (sortKey: [UInt8], json: JSON)?
        func emitGroup() throws {
            guard let key = groupKey else { return }
            defer { groupKey = nil }
            let value = try reduction.finish()
            reduction = Reduction(definition: definition, group: index.group, view: view, engine: engine)
            if skip > 0 {
                skip -= 1
                return
            }
            guard remaining > 0 else { return }
            remaining -= 1
            let row = JSON.object(JSONObject([("key", level == .none ? .null : key.json), ("value", value)]))
            try output.row(row.serialized())
        }
        let scans = query.keys.map { keys in keys.map { query.scan(view: view, key: $0) } } ?? [query.scan(view: view)]
        for scan in scans where remaining > 0 {
            // Whole chunks inside the range come with their stored partial; the rest as rows.
            try index.file.fold(scan) { item in
                switch item {
                case .row(let row):
                    // Keys are parsed only when something looks at them (groups, distinct counts, JavaScript).
                    let key = needsKey ? try JSON.parse(row.key) : .null
                    let grouped = App.groupKey(key, row.sortKey, level)
                    if let current = groupKey, current.sortKey != grouped.sortKey { try emitGroup() }
                    guard remaining > 0 else { return .stop }
                    if groupKey == nil { groupKey = grouped }
                    try reduction.add(key: key, docID: row.docID, value: row.value)
                    return .next
                case .chunk(let chunk):
                    // Taken whole when its first and last rows fall in one group; the group's key is that of its
                    // first row in the scan's order, as row by row.
                    guard let grouped = try App.chunkGroup(chunk, level, descending: scan.descending) else {
                        return .expand
                    }
                    if let current = groupKey, current.sortKey != grouped.sortKey { try emitGroup() }
                    guard remaining > 0 else { return .stop }
                    guard try reduction.merge(partial: chunk.partial) else { return .expand }
                    if groupKey == nil { groupKey = grouped }
                    return .next
                }
            }
            // Each key of `keys` is its own group, even when two keys collate alike.
            if query.keys != nil { try emitGroup() }
        }
        try emitGroup()
        try output.finish()
    }

    /// The group all of `chunk` falls in, nil when its rows span two groups.
    private static func chunkGroup(_ chunk: ViewChunk, _ level: ViewQuery.GroupLevel, descending: Bool) throws
        -> (sortKey: [UInt8], json: JSON)?
    {
        switch level {
        case .none:
            return ([], .null)
        case .exact:
            guard chunk.firstSortKey == chunk.lastSortKey else { return nil }
            return (chunk.firstSortKey, try JSON.parse(descending ? chunk.lastKey : chunk.firstKey))
        case .level:
            let first = groupKey(try JSON.parse(chunk.firstKey), chunk.firstSortKey, level)
            let last = groupKey(try JSON.parse(chunk.lastKey), chunk.lastSortKey, level)
            guard first.sortKey == last.sortKey else { return nil }
            return descending ? last : first
        }
    }

    /// The key a row is grouped under: nothing (one group), the whole key, or an array key's first `n` elements.
    private static func groupKey(_ key: JSON, _ sortKey: [UInt8], _ level: ViewQuery.GroupLevel)
        -> (sortKey: [UInt8], json: JSON)
    {
        switch level {
        case .none: return ([], .null)
        case .exact: return (sortKey, key)
        case .level(let n):
            guard case .array(let items) = key, items.count > n else { return (sortKey, key) }
            let prefix = JSON.array(Array(items.prefix(n)))
            return (ViewCollation.sortKey(prefix), prefix)
        }
    }
}

/// The reduction of one group: built-ins fold natively; JavaScript reduces run on chunks of rows, then rereduce
/// the chunks' results (CouchDB's reduce/rereduce contract, so a group of any size holds one chunk).
struct Reduction {
    let definition: ViewDefinition
    let group: ViewGroup
    let view: Int
    let engine: any ViewEngine
    private var accumulator: ReduceAccumulator?
    private var keys: [JSON] = []
    private var values: [JSON] = []
    private var partials: [JSON] = []

    /// Rows per JavaScript reduce call.
    static let chunkSize = 200

    init(definition: ViewDefinition, group: ViewGroup, view: Int, engine: any ViewEngine) {
        self.definition = definition
        self.group = group
        self.view = view
        self.engine = engine
        accumulator = definition.builtin?.accumulator()
    }

    mutating func add(key: JSON, docID: String, value: [UInt8]) throws {
        if var accumulator {
            let parsed =
                accumulator.reducer == .count || accumulator.reducer == .approxCountDistinct
                ? JSON.null : try JSON.parse(value)
            do {
                try accumulator.add(key: key, value: parsed)
            } catch {
                throw CouchError.invalidValue(error.reason)
            }
            self.accumulator = accumulator
            return
        }
        keys.append(.array([key, .string(docID)]))
        values.append(try JSON.parse(value))
        if keys.count >= Reduction.chunkSize { try flush() }
    }

    private mutating func flush() throws {
        guard !keys.isEmpty else { return }
        partials.append(try engine.reduce(group, view: view, keys: keys, values: values))
        keys.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
    }

    /// What a chunk stores of the rows added so far (nil: nothing that reads back exactly, so none).
    mutating func partial() throws -> JSON? {
        if let accumulator { return accumulator.partial }
        return try finish()
    }

    /// Folds in a chunk's stored partial, in row order with the rows added around it; false (nothing folded) when
    /// its rows must be added one by one instead, for the exact error or because the partial does not read.
    mutating func merge(partial bytes: [UInt8]) throws -> Bool {
        guard let partial = try? JSON.parse(bytes) else { return false }
        if var accumulator {
            guard let other = ReduceAccumulator(accumulator.reducer, partial: partial),
                accumulator.mergeExactly(other)
            else { return false }
            self.accumulator = accumulator
            return true
        }
        try flush()
        partials.append(partial)
        return true
    }

    mutating func finish() throws -> JSON {
        if let accumulator { return accumulator.result }
        try flush()
        if partials.count == 1 { return partials[0] }
        if partials.isEmpty { return try engine.reduce(group, view: view, keys: [], values: []) }
        return try engine.rereduce(group, view: view, values: partials)
    }
}

/// The body of a view response: the head is sent with the first row (a reduce that fails on its first group is
/// still a clean error response), rows are separated as CouchDB separates them.
struct ViewOutput {
    private var writer: FeedWriter
    private var head: [UInt8]?
    private var rows = 0

    init(reply: Reply) {
        writer = FeedWriter(reply: reply)
    }

    /// Starts the response now.
    mutating func start(_ head: [UInt8]) throws {
        try writer.reply.begin(200)
        try writer.append(head)
    }

    /// Starts the response with the first row.
    mutating func `defer`(_ head: [UInt8]) { self.head = head }

    mutating func row(_ bytes: [UInt8]) throws {
        if let head {
            self.head = nil
            try start(head)
        }
        if rows > 0 { try writer.append(",\r\n") }
        rows += 1
        try writer.append(bytes)
    }

    mutating func finish() throws {
        if let head {
            self.head = nil
            try start(head)
        }
        try writer.append("\r\n]}\n")
        try writer.send()
        try writer.reply.finish()
    }
}
