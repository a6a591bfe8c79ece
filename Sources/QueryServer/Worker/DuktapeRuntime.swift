import CDuktape
import CouchWire

/// One Duktape heap holding a design environment per design document: the engine side of a query-server worker.
/// Each environment is a Duktape thread with its own global object and built-ins, in which
/// `QueryRuntimeScript` ran (freezing them) before the design document's code; requests reach it as text and
/// leave it as text, so no two design documents share a global, a built-in or an object. The most recently used
/// `maxEnvironments` are kept; older ones are dropped (the server sends the design document again when it asks
/// for one the worker no longer has). Not thread-safe; a worker process owns exactly one.
final class DuktapeRuntime {
    private let context: OpaquePointer

    /// Environments kept at once. The server sends a design document's body again once it has sent this many
    /// (see `QueryServer.callSerialized`), so a worker never needs more.
    static let maxEnvironments = 64

    private struct Environment {
        let context: OpaquePointer
        let slot: UInt32
        var lastUse: UInt64
    }

    private var environments: [String: Environment] = [:]
    private var freeSlots = Array((0..<UInt32(DuktapeRuntime.maxEnvironments)).reversed())
    private var clock: UInt64 = 0

    /// - Parameter heapLimit: Most bytes the JavaScript heap may hold; an allocation past it fails inside the
    ///   script (a `RangeError`), which becomes that request's error.
    init(heapLimit: Int) throws(QueryServerError) {
        guard let context = couchlite_duk_create(heapLimit) else {
            throw .workerFailed("could not create a JavaScript heap")
        }
        self.context = context
        couchlite_duk_set_exchange(WorkerExchange.hook)
    }

    deinit { duk_destroy_heap(context) }

    /// Design environments alive now (for tests of the bound).
    var environmentCount: Int { environments.count }

    /// Runs one request and returns the response's JSON text. A request is a header line (JSON: `op` and `keys`,
    /// the design documents it runs, in order), a newline, and the body every environment it names parses itself.
    /// A script error that escapes the handler (it catches everything it can) comes back as an
    /// `{"error","reason"}` response.
    func dispatch(_ request: [UInt8]) -> [UInt8] {
        guard let newline = request.firstIndex(of: 0x0A),
            case .object(let header)? = try? JSON.parse(Array(request[..<newline])),
            let op = header["op"]?.stringValue, let keys = header["keys"]?.arrayValue?.compactMap(\.stringValue),
            !keys.isEmpty
        else { return DuktapeRuntime.failure("bad_request", "a request is a header line and a body") }
        let body = DuktapeText.forEngine(Array(request[(newline + 1)...]))
        guard op == "validate" else { return call(keys[0], body, extra: #"{"index":0,"decided":[]}"#) }
        return validate(keys, body)
    }

    /// Runs each design document's `validate_doc_update` in turn, each in its environment; an item refused by
    /// one is not shown to the next (CouchDB stops at the first refusal).
    private func validate(_ keys: [String], _ body: [UInt8]) -> [UInt8] {
        var outcomes: [JSON]? = nil
        var logs: [JSON] = []
        for (index, key) in keys.enumerated() {
            let decided = (outcomes ?? []).map { JSON.bool($0 != .null) }
            var extra = JSONObject()
            extra["index"] = .int(index)
            extra["decided"] = .array(decided)
            let bytes = call(key, body, extra: JSON.object(extra).serializedString)
            guard case .object(let response)? = try? JSON.parse(bytes), let results = response["ok"]?.arrayValue
            else { return bytes }
            logs += response["log"]?.arrayValue ?? []
            guard var merged = outcomes else {
                outcomes = results
                continue
            }
            for (item, result) in results.enumerated() where item < merged.count && merged[item] == .null {
                merged[item] = result
            }
            outcomes = merged
        }
        var response = JSONObject()
        response["ok"] = .array(outcomes ?? [])
        if !logs.isEmpty { response["log"] = .array(logs) }
        return JSON.object(response).serialized()
    }

    /// Calls the environment of `key` (made first if the worker has none); an environment made for a request
    /// that did not carry its design document is dropped again.
    private func call(_ key: String, _ body: [UInt8], extra: String) -> [UInt8] {
        let created: Bool
        let environment: Environment
        if let existing = environments[key] {
            environment = existing
            created = false
        } else {
            switch makeEnvironment() {
            case .success(let made): environment = made
            case .failure(let error): return DuktapeRuntime.failure("runtime_error", error.reason)
            }
            created = true
        }
        clock += 1
        environments[key] = Environment(context: environment.context, slot: environment.slot, lastUse: clock)
        let env = environment.context
        let extraBytes = Array(extra.utf8)
        let rc = body.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                extraBytes.withUnsafeBufferPointer { extraBuffer in
                    extraBuffer.withMemoryRebound(to: CChar.self) { extraChars in
                        couchlite_duk_env_call(
                            env, chars.baseAddress, chars.count, extraChars.baseAddress, extraChars.count)
                    }
                }
            }
        }
        let response: [UInt8]
        if rc != 0 {
            response = DuktapeRuntime.failure("runtime_error", DuktapeRuntime.topString(env))
        } else {
            var length = 0
            if let pointer = couchlite_duk_safe_string(env, &length) {
                response = DuktapeText.fromEngine(UnsafeRawBufferPointer(start: pointer, count: length))
            } else {
                response = []
            }
        }
        duk_pop(env)
        if created && response.starts(with: Array(#"{"unknown_ddoc""#.utf8)) { drop(key) }
        return response
    }

    private func makeEnvironment() -> Result<Environment, QueryServerError> {
        if freeSlots.isEmpty, let oldest = environments.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            drop(oldest)
        }
        guard let slot = freeSlots.popLast() else { return .failure(.workerFailed("no design environment is free")) }
        let source = Array(QueryRuntimeScript.source.utf8)
        var rc: duk_int_t = 0
        let made = source.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                couchlite_duk_env_create(context, slot, chars.baseAddress, chars.count, &rc)
            }
        }
        guard let made, rc == 0 else {
            let message = made.map { DuktapeRuntime.topString($0) } ?? "the JavaScript heap is full"
            couchlite_duk_env_drop(context, slot)
            freeSlots.append(slot)
            return .failure(.workerFailed("a design environment did not load: \(message)"))
        }
        return .success(Environment(context: made, slot: slot, lastUse: clock))
    }

    private func drop(_ key: String) {
        guard let environment = environments.removeValue(forKey: key) else { return }
        couchlite_duk_env_drop(context, environment.slot)
        freeSlots.append(environment.slot)
    }

    private static func failure(_ error: String, _ reason: String) -> [UInt8] {
        var bytes = Array(#"{"error":"#.utf8)
        JSON.appendQuoted(error, to: &bytes)
        bytes += Array(#","reason":"#.utf8)
        JSON.appendQuoted(reason, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// The value on top of `context`'s stack as text (for errors).
    private static func topString(_ context: OpaquePointer) -> String {
        var length = 0
        guard let pointer = couchlite_duk_safe_string(context, &length) else { return "" }
        return String(
            decoding: DuktapeText.fromEngine(UnsafeRawBufferPointer(start: pointer, count: length)), as: UTF8.self)
    }

    /// Bytes the JavaScript heap holds now.
    static var heapBytes: Int { couchlite_duk_used_bytes() }
}
