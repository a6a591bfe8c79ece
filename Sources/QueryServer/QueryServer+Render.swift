import CouchWire

/// What a show or update function answered: CouchDB's external response object (`body`, `json`, `base64`,
/// `headers`, `code`), still as the function wrote it; the server checks it before anything is sent.
public struct RenderedResponse: Sendable, Equatable {
    public let object: JSONObject
}

/// What an update function made of a request: the document to store (nil: store nothing) and the response.
public struct UpdateOutcome: Sendable, Equatable {
    public let document: JSON?
    public let response: RenderedResponse
}

extension QueryServer {
    /// Runs `shows.<name>` of `ddoc`: `fun.apply(ddoc, [doc, req])` (`doc` null when there is none).
    /// - Throws: `.function` with CouchDB's error (`render_error`, `not_found`, `not_acceptable`, or what the function
    ///   threw), `.compilation`, `.timeout`.
    public func show(_ ddoc: DesignDocument, name: String, doc: JSON, request: JSON) throws(QueryServerError)
        -> RenderedResponse
    {
        let answer = try render("show", ddoc, name: name, argument: doc, request: request)
        guard let parts = answer.arrayValue, parts.count == 2, parts[0] == "resp" else {
            throw .workerFailed("show answered \(answer.serializedString.prefix(200))")
        }
        return try QueryServer.response(parts[1], from: "show")
    }

    /// Runs `updates.<name>` of `ddoc`: `fun.apply(ddoc, [doc, req])` returning `[doc, response]`.
    public func update(_ ddoc: DesignDocument, name: String, doc: JSON, request: JSON) throws(QueryServerError)
        -> UpdateOutcome
    {
        let answer = try render("update", ddoc, name: name, argument: doc, request: request)
        guard let parts = answer.arrayValue, parts.count == 3, parts[0] == "up" else {
            throw .workerFailed("update answered \(answer.serializedString.prefix(200))")
        }
        var document: JSON? = parts[1]
        if case .null = parts[1] { document = nil }
        return UpdateOutcome(document: document, response: try QueryServer.response(parts[2], from: "update"))
    }

    /// Starts `lists.<name>` of `ddoc` with the view's `head` (`total_rows`, `offset`…) on a worker it keeps until
    /// the session ends; `output` receives what the function writes, as it writes it.
    public func list(
        _ ddoc: DesignDocument, name: String, head: JSON, request: JSON,
        output: @escaping (ListOutput) throws -> Void
    ) throws -> ListSession {
        try ListSession(self, ddoc, name: name, head: head, request: request, output: output)
    }

    private func render(_ op: String, _ ddoc: DesignDocument, name: String, argument: JSON, request: JSON)
        throws(QueryServerError) -> JSON
    {
        try call(op, [ddoc]) { bodies in
            QueryServer.renderMessage(op, ddoc, name: name, argument: argument, request: request, bodies: bodies)
        }
    }

    static func renderMessage(
        _ op: String, _ ddoc: DesignDocument, name: String, argument: JSON, request: JSON, bodies: Set<String>
    ) -> JSONObject {
        var message = JSONObject()
        message["op"] = .string(op)
        message["key"] = .string(ddoc.key)
        if bodies.contains(ddoc.key) { message["ddoc"] = .object(ddoc.body) }
        message["name"] = .string(name)
        message["arg"] = argument
        message["req"] = request
        return message
    }

    private static func response(_ value: JSON, from function: String) throws(QueryServerError) -> RenderedResponse {
        guard let object = value.objectValue else {
            throw .function(error: "render_error", reason: "undefined response from \(function) function")
        }
        return RenderedResponse(object: object)
    }
}

/// What a list function wrote since the last time: its `start()` response the first time (or when it called
/// `start` again), and its `send()` chunks.
public struct ListOutput: Sendable, Equatable {
    public let start: JSONObject?
    public let chunks: [String]
}

/// One running list function and the worker it holds. The server pushes the view's rows one at a time (`row`);
/// the function pulls each with `getRow()`, and what it writes reaches `output` as it writes it, so neither side
/// holds more than a row and one flush of output. The whole list has the configured timeout, rows and all (a row
/// renewing it let one request hold a worker for rows × the timeout); the lists of its database may hold all workers but one.
/// End it with `finish` (or
/// `close` when the request fails): a worker left mid-list is killed, never reused.
public final class ListSession {
    private let server: QueryServer
    private let worker: WorkerProcess
    private let output: (ListOutput) throws -> Void
    /// The whole list's: set when it starts, never renewed by a row.
    private let deadline: ContinuousClock.Instant
    /// The function returned (or failed): rows are no longer wanted.
    public private(set) var finished = false
    private var closed = false

    init(
        _ server: QueryServer, _ ddoc: DesignDocument, name: String, head: JSON, request: JSON,
        output: @escaping (ListOutput) throws -> Void
    ) throws {
        self.server = server
        self.output = output
        let timeout = server.pool.configuration.timeout
        deadline = ContinuousClock.now + timeout
        worker = try server.pool.checkOut(deadline: deadline, for: ddoc.database)
        do {
            try begin(ddoc, name: name, head: head, request: request)
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Gives the function its next row (a view row's JSON text). Returns false once the function wants no more.
    @discardableResult
    public func row(_ bytes: [UInt8]) throws -> Bool {
        guard !finished else { return false }
        try send(Array(#"{"row":"#.utf8) + bytes + [UInt8(ascii: "}")])
        try advance()
        return !finished
    }

    /// Tells the function the rows are over and waits for the rest of its output.
    public func finish() throws {
        defer { close() }
        guard !finished else { return }
        try send(Array(#"{"end":true}"#.utf8))
        try advance()
    }

    /// Gives the worker back (killed if the function is still running).
    public func close() {
        guard !closed else { return }
        closed = true
        if !finished { worker.kill() }
        server.pool.checkIn(worker)
    }

    private func begin(_ ddoc: DesignDocument, name: String, head: JSON, request: JSON) throws {
        if worker.knownDesignDocuments.count > 64 { worker.knownDesignDocuments.removeAll() }
        var bodies = Set([ddoc.key]).subtracting(worker.knownDesignDocuments)
        let header = JSON.object(JSONObject([("op", "list"), ("keys", .array([.string(ddoc.key)]))])).serialized()
        for _ in 0..<2 {
            let message = QueryServer.renderMessage(
                "list", ddoc, name: name, argument: head, request: request, bodies: bodies)
            worker.calls += 1
            try send(header + [0x0A] + JSON.object(message).serialized())
            guard try advance(first: true) else {
                worker.knownDesignDocuments.removeAll()
                bodies = [ddoc.key]
                continue
            }
            worker.knownDesignDocuments.formUnion(bodies)
            return
        }
        finished = true
        worker.kill()
        throw QueryServerError.workerFailed("the worker did not keep a design document it was sent")
    }

    private func send(_ bytes: [UInt8]) throws {
        try worker.sendMessage(bytes, deadline: deadline, timeout: server.pool.configuration.timeout)
    }

    /// Reads the worker's messages until it waits for a row or ends; false when it asked for the design document.
    @discardableResult
    private func advance(first: Bool = false) throws -> Bool {
        let timeout = server.pool.configuration.timeout
        while true {
            let bytes = try worker.receiveMessage(deadline: deadline, timeout: timeout)
            guard case .object(let message)? = try? JSON.parse(bytes) else {
                worker.kill()
                finished = true
                throw QueryServerError.workerFailed("the worker sent a message that is not a JSON object")
            }
            if let exchange = message["exchange"]?.objectValue {
                if let flushed = exchange["flush"] {
                    try output(ListOutput(start: nil, chunks: ListSession.strings(flushed)))
                    try send(Array(#"{"continue":true}"#.utf8))
                    continue
                }
                try output(
                    ListOutput(start: exchange["start"]?.objectValue, chunks: ListSession.strings(exchange["chunks"])))
                return true
            }
            if first && message["unknown_ddoc"] != nil { return false }
            finished = true
            for line in message["log"]?.arrayValue ?? [] { server.log(QueryServer.text(line)) }
            if let ok = message["ok"]?.objectValue {
                try output(ListOutput(start: ok["start"]?.objectValue, chunks: ListSession.strings(ok["end"])))
                return true
            }
            let error = message["error"]?.stringValue ?? "unnamed_error"
            let reason = QueryServer.text(message["reason"])
            if error == "compilation_error" { throw QueryServerError.compilation(reason) }
            throw QueryServerError.function(error: error, reason: reason)
        }
    }

    private static func strings(_ value: JSON?) -> [String] {
        (value?.arrayValue ?? []).map { $0.stringValue ?? $0.serializedString }
    }
}
