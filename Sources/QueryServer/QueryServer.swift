import CouchWire
import Dispatch
import Foundation
import Synchronization

/// A design document as the query server sees it. Functions are compiled once per `key` in each worker, so
/// the key must change whenever the body does: it is the database, the id and the revision.
public struct DesignDocument: Sendable {
    public let key: String
    /// The database it is in, as bytes: what the pool's share of workers held by lists counts
    /// (`QueryServerPool.checkOut`).
    public let database: [UInt8]
    /// The whole document, `_id` and `_rev` included (it is `this` for filters and validations, and where
    /// `require` finds CommonJS modules).
    public let body: JSONObject

    public init(database: String, id: String, rev: String, body: JSONObject) {
        key = database + "\u{0}" + id + "\u{0}" + rev
        self.database = Array(database.utf8)
        var body = body
        if body["_id"] == nil { body["_id"] = .string(id) }
        if body["_rev"] == nil { body["_rev"] = .string(rev) }
        self.body = body
    }
}

/// What one map function made of one document.
public enum MapOutcome: Sendable, Equatable {
    /// The `emit(key, value)` calls, in order (none is `[]`).
    case emitted([MapRow])
    /// The function threw for this document; CouchDB logs it and indexes nothing for the document.
    case failed(error: String, reason: String)
}

/// One `emit(key, value)`: `undefined` arrives as `null`.
public struct MapRow: Sendable, Equatable {
    public let key: JSON
    public let value: JSON

    public init(key: JSON, value: JSON) {
        self.key = key
        self.value = value
    }
}

/// What `validate_doc_update` said about one write.
public enum ValidationOutcome: Sendable, Equatable {
    case allowed
    /// `throw {forbidden: reason}` → 403 `forbidden`.
    case forbidden(String)
    /// `throw {unauthorized: reason}` → 401 `unauthorized`.
    case unauthorized(String)
    /// Anything else thrown: `error` is `unknown_error` or an `Error`'s name (500).
    case failed(error: String, reason: String)
}

/// One write for `validate`: the document as it would be stored and the current winner (nil for a new one).
public struct ValidationItem: Sendable {
    public let newDoc: JSON
    public let oldDoc: JSON?

    public init(newDoc: JSON, oldDoc: JSON?) {
        self.newDoc = newDoc
        self.oldDoc = oldDoc
    }
}

/// The server's entry to JavaScript: design functions run in worker processes (`couchlite query-server`,
/// see `QueryWorker`) managed by a pool, one batch per call, each call bounded by the configured timeout.
/// Thread-safe; make one per server and share it.
public final class QueryServer: Sendable {
    let pool: QueryServerPool
    let log: @Sendable (String) -> Void

    /// - Parameter log: Receives each `log(…)` message the functions wrote.
    public init(
        _ configuration: QueryServerConfiguration = QueryServerConfiguration(),
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        pool = QueryServerPool(configuration)
        self.log = log
    }

    public var configuration: QueryServerConfiguration { pool.configuration }

    /// Workers started so far (one more after each killed worker is replaced).
    public var workersStarted: Int { pool.workersStarted }

    /// Process ids of the idle workers (for tests and diagnostics).
    public var workerPIDs: [Int32] { pool.idlePIDs }

    /// Runs `filters.<name>` of `ddoc` on each document: `fun.apply(ddoc, [doc, req])`, truthy → true.
    /// - Throws: `.function` if it threw for any document (the whole batch fails, as in CouchDB).
    public func filter(_ ddoc: DesignDocument, name: String, docs: [JSON], request: JSON)
        throws(QueryServerError) -> [Bool]
    {
        try filter(ddoc, name: name, serializedDocs: docs.map { $0.serialized() }, request: request)
    }

    /// `filter` with each document already serialized (a JSON object's text, trusted to be valid): a feed builds
    /// them from stored bodies without parsing them.
    public func filter(_ ddoc: DesignDocument, name: String, serializedDocs: [[UInt8]], request: JSON)
        throws(QueryServerError) -> [Bool]
    {
        // A big batch is halved over two workers at once: the JavaScript of one half runs while the other's
        // documents are being parsed, and a feed uses both cores.
        guard serializedDocs.count >= QueryServer.parallelBatch, pool.configuration.maxWorkers > 1 else {
            return try filterBatch(ddoc, name: name, serializedDocs: serializedDocs, request: request)
        }
        let middle = serializedDocs.count / 2
        let halves = [Array(serializedDocs[..<middle]), Array(serializedDocs[middle...])]
        let second = Mutex<Result<[Bool], QueryServerError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            let outcome = Result { () throws(QueryServerError) -> [Bool] in
                try filterBatch(ddoc, name: name, serializedDocs: halves[1], request: request)
            }
            second.withLock { $0 = outcome }
            done.signal()
        }
        let first = Result { () throws(QueryServerError) -> [Bool] in
            try filterBatch(ddoc, name: name, serializedDocs: halves[0], request: request)
        }
        done.wait()
        let results = [first, second.withLock { $0 }]
        var verdicts: [Bool] = []
        verdicts.reserveCapacity(serializedDocs.count)
        for outcome in results {
            guard let outcome else { throw .workerFailed("a filter batch did not run") }
            verdicts += try outcome.get()
        }
        return verdicts
    }

    /// Batches at least this big are filtered by two workers at once.
    static let parallelBatch = 128

    private func filterBatch(_ ddoc: DesignDocument, name: String, serializedDocs: [[UInt8]], request: JSON)
        throws(QueryServerError) -> [Bool]
    {
        let response = try callSerialized("filter", [ddoc]) { bodies in
            var message = JSONObject()
            message["op"] = "filter"
            message["key"] = .string(ddoc.key)
            if bodies.contains(ddoc.key) { message["ddoc"] = .object(ddoc.body) }
            message["name"] = .string(name)
            message["req"] = request
            return QueryServer.serialize(message, appendingArray: "docs", of: serializedDocs)
        }
        guard let results = response.arrayValue, results.count == serializedDocs.count else {
            throw .workerFailed("filter answered \(response.serializedString.prefix(200))")
        }
        return results.map { $0.boolValue == true }
    }

    /// `message` serialized with one more member, `name`, an array of already serialized values.
    static func serialize(_ message: JSONObject, appendingArray name: String, of elements: [[UInt8]]) -> [UInt8] {
        var bytes = JSON.object(message).serialized()
        bytes.removeLast()  // the closing brace
        bytes.reserveCapacity(bytes.count + elements.reduce(0) { $0 + $1.count + 1 } + name.utf8.count + 8)
        if !message.isEmpty { bytes.append(UInt8(ascii: ",")) }
        JSON.appendQuoted(name, to: &bytes)
        bytes += [UInt8(ascii: ":"), UInt8(ascii: "[")]
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += element
        }
        bytes += [UInt8(ascii: "]"), UInt8(ascii: "}")]
        return bytes
    }

    /// Runs the map functions `views.<name>.map` of `ddoc` for each document.
    /// - Returns: One array per document, holding one outcome per view, in the order of `views`.
    /// - Throws: `.compilation` when a map function does not compile (no document is mapped).
    public func map(_ ddoc: DesignDocument, views: [String], docs: [JSON]) throws(QueryServerError) -> [[MapOutcome]] {
        // A big batch is halved over two workers at once, as `filter` does: a view build uses both cores.
        guard docs.count >= QueryServer.parallelBatch, pool.configuration.maxWorkers > 1 else {
            return try mapBatch(ddoc, views: views, docs: docs)
        }
        let middle = docs.count / 2
        let halves = [Array(docs[..<middle]), Array(docs[middle...])]
        let results = Mutex<[Result<[[MapOutcome]], QueryServerError>?]>([nil, nil])
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            let outcome = Result { () throws(QueryServerError) -> [[MapOutcome]] in
                try mapBatch(ddoc, views: views, docs: halves[part])
            }
            results.withLock { $0[part] = outcome }
        }
        var outcomes: [[MapOutcome]] = []
        outcomes.reserveCapacity(docs.count)
        for outcome in results.withLock({ $0 }) {
            guard let outcome else { throw .workerFailed("a map batch did not run") }
            outcomes += try outcome.get()
        }
        return outcomes
    }

    private func mapBatch(_ ddoc: DesignDocument, views: [String], docs: [JSON]) throws(QueryServerError)
        -> [[MapOutcome]]
    {
        let response = try call("map", [ddoc]) { bodies in
            var message = JSONObject()
            message["op"] = "map"
            message["key"] = .string(ddoc.key)
            if bodies.contains(ddoc.key) { message["ddoc"] = .object(ddoc.body) }
            message["views"] = .array(views.map { .string($0) })
            message["docs"] = .array(docs)
            return message
        }
        guard let perDoc = response.arrayValue, perDoc.count == docs.count else {
            throw .workerFailed("map answered \(response.serializedString.prefix(200))")
        }
        var outcomes: [[MapOutcome]] = []
        outcomes.reserveCapacity(perDoc.count)
        for doc in perDoc {
            guard let perView = doc.arrayValue, perView.count == views.count else {
                throw .workerFailed("map answered a malformed row")
            }
            outcomes.append(
                try perView.map { (view: JSON) throws(QueryServerError) -> MapOutcome in
                    if let object = view.objectValue {
                        return .failed(
                            error: object["error"]?.stringValue ?? "unnamed_error",
                            reason: QueryServer.text(object["reason"]))
                    }
                    guard let rows = view.arrayValue else { throw .workerFailed("map answered a malformed row") }
                    return .emitted(
                        try rows.map { (row: JSON) throws(QueryServerError) -> MapRow in
                            guard let pair = row.arrayValue, pair.count == 2 else {
                                throw .workerFailed("map answered a malformed emit")
                            }
                            return MapRow(key: pair[0], value: pair[1])
                        })
                })
        }
        return outcomes
    }

    /// Runs JavaScript reduce functions (their sources, from `ddoc`'s views, run in `ddoc`'s environment) over
    /// map rows: `fun(keys, values, false)` where each key is `[key, docid]`. Returns one value per source.
    public func reduce(_ ddoc: DesignDocument, sources: [String], keys: [JSON], values: [JSON])
        throws(QueryServerError) -> [JSON]
    {
        try reduceCall(ddoc, sources: sources, keys: keys, values: values, rereduce: false)
    }

    /// Runs JavaScript reduce functions in rereduce mode: `fun(null, values, true)`.
    public func rereduce(_ ddoc: DesignDocument, sources: [String], values: [JSON]) throws(QueryServerError) -> [JSON] {
        try reduceCall(ddoc, sources: sources, keys: nil, values: values, rereduce: true)
    }

    private func reduceCall(_ ddoc: DesignDocument, sources: [String], keys: [JSON]?, values: [JSON], rereduce: Bool)
        throws(QueryServerError) -> [JSON]
    {
        let response = try call("reduce", [ddoc]) { bodies in
            var message = JSONObject()
            message["op"] = "reduce"
            message["key"] = .string(ddoc.key)
            if bodies.contains(ddoc.key) { message["ddoc"] = .object(ddoc.body) }
            message["sources"] = .array(sources.map { .string($0) })
            message["keys"] = keys.map { .array($0) } ?? .null
            message["values"] = .array(values)
            message["rereduce"] = .bool(rereduce)
            return message
        }
        guard let results = response.arrayValue, results.count == sources.count else {
            throw .workerFailed("reduce answered \(response.serializedString.prefix(200))")
        }
        return results
    }

    /// Runs every `validate_doc_update` of `ddocs` (in order; the first refusal wins) on each item:
    /// `fun.apply(ddoc, [newDoc, oldDoc, userCtx, secObj])`.
    /// - Throws: `.compilation` when a validation function does not compile (CouchDB fails the write too).
    public func validate(_ ddocs: [DesignDocument], items: [ValidationItem], userCtx: JSON, secObj: JSON)
        throws(QueryServerError) -> [ValidationOutcome]
    {
        guard !ddocs.isEmpty, !items.isEmpty else { return items.map { _ in .allowed } }
        let response = try call("validate", ddocs) { bodies in
            var message = JSONObject()
            message["op"] = "validate"
            message["ddocs"] = .array(
                ddocs.map { ddoc in
                    var entry = JSONObject()
                    entry["key"] = .string(ddoc.key)
                    if bodies.contains(ddoc.key) { entry["ddoc"] = .object(ddoc.body) }
                    return .object(entry)
                })
            message["items"] = .array(
                items.map { item in .object(JSONObject([("new", item.newDoc), ("old", item.oldDoc ?? .null)])) })
            message["userCtx"] = userCtx
            message["secObj"] = secObj
            return message
        }
        guard let results = response.arrayValue, results.count == items.count else {
            throw .workerFailed("validate answered \(response.serializedString.prefix(200))")
        }
        return results.map { result in
            guard let object = result.objectValue else { return .allowed }
            if let reason = object["forbidden"] { return .forbidden(QueryServer.text(reason)) }
            if let reason = object["unauthorized"] { return .unauthorized(QueryServer.text(reason)) }
            return .failed(
                error: object["error"]?.stringValue ?? "unknown_error", reason: QueryServer.text(object["reason"]))
        }
    }

    /// A thrown reason as CouchDB shows it: a string as itself, anything else as its JSON.
    static func text(_ value: JSON?) -> String {
        guard let value else { return "" }
        return value.stringValue ?? value.serializedString
    }

    /// Sends one request built by `build` (given the keys of the design documents whose bodies must go with
    /// it) and returns its `ok` value. A worker that says it does not know a design document (it evicted it)
    /// is sent the bodies again. The request starts with a header line naming `op` and the design documents
    /// it runs: the worker runs each in that design document's own environment (see `DuktapeRuntime`).
    func call(_ op: String, _ ddocs: [DesignDocument], _ build: (Set<String>) -> JSONObject)
        throws(QueryServerError) -> JSON
    {
        try callSerialized(op, ddocs) { bodies in JSON.object(build(bodies)).serialized() }
    }

    private func callSerialized(_ op: String, _ ddocs: [DesignDocument], _ build: (Set<String>) -> [UInt8])
        throws(QueryServerError) -> JSON
    {
        var headerObject = JSONObject()
        headerObject["op"] = .string(op)
        headerObject["keys"] = .array(ddocs.map { .string($0.key) })
        let header = JSON.object(headerObject).serialized() + [0x0A]
        // One call is short (its timeout bounds it), so it takes any worker: a view build uses them all.
        let response: JSONObject = try pool.withWorker { (worker, deadline) throws(QueryServerError) -> JSONObject in
            if worker.knownDesignDocuments.count > 64 { worker.knownDesignDocuments.removeAll() }
            var bodies = Set(ddocs.map(\.key)).subtracting(worker.knownDesignDocuments)
            for _ in 0..<2 {
                let request = header + build(bodies)
                let bytes = try worker.call(request, deadline: deadline, timeout: pool.configuration.timeout)
                guard case .object(let response)? = try? JSON.parse(bytes) else {
                    worker.kill()
                    throw .workerFailed("the worker sent a message that is not a JSON object")
                }
                if response["unknown_ddoc"] != nil {
                    worker.knownDesignDocuments.removeAll()
                    bodies = Set(ddocs.map(\.key))
                    continue
                }
                worker.knownDesignDocuments.formUnion(bodies)
                return response
            }
            worker.kill()
            throw .workerFailed("the worker did not keep a design document it was sent")
        }
        if let lines = response["log"]?.arrayValue {
            for line in lines { log(QueryServer.text(line)) }
        }
        if let ok = response["ok"] { return ok }
        let error = response["error"]?.stringValue ?? "unnamed_error"
        let reason = QueryServer.text(response["reason"])
        if error == "compilation_error" { throw .compilation(reason) }
        throw .function(error: error, reason: reason)
    }
}
