import CDuktape
import CouchWire

/// One Duktape heap running `QueryRuntimeScript`: the engine side of a query-server worker. Not thread-safe;
/// a worker process owns exactly one.
final class DuktapeRuntime {
    private let context: OpaquePointer

    /// - Parameter heapLimit: Most bytes the JavaScript heap may hold; an allocation past it fails inside the
    ///   script (a `RangeError`), which becomes that request's error.
    init(heapLimit: Int) throws(QueryServerError) {
        guard let context = couchlite_duk_create(heapLimit) else {
            throw .workerFailed("could not create a JavaScript heap")
        }
        self.context = context
        let source = Array(QueryRuntimeScript.source.utf8)
        let rc = source.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                couchlite_duk_peval(context, chars.baseAddress, chars.count, "couchlite-query-runtime")
            }
        }
        guard rc == 0 else {
            let message = topString()
            duk_destroy_heap(context)
            throw .workerFailed("the query runtime did not load: \(message)")
        }
        couchlite_duk_keep_dispatcher(context)
    }

    deinit { duk_destroy_heap(context) }

    /// Runs one request (its JSON text, UTF-8) and returns the response's JSON text. A script error that
    /// escapes the dispatcher (it catches everything it can) comes back as an `{"error","reason"}` response.
    func dispatch(_ request: [UInt8]) -> [UInt8] {
        let text = DuktapeText.forEngine(request)
        let rc = text.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                couchlite_duk_dispatch(context, chars.baseAddress, chars.count)
            }
        }
        defer { duk_pop(context) }
        if rc != 0 {
            var reason: [UInt8] = []
            JSON.appendQuoted(topString(), to: &reason)
            return Array("{\"error\":\"runtime_error\",\"reason\":".utf8) + reason + [UInt8(ascii: "}")]
        }
        var length = 0
        guard let pointer = couchlite_duk_safe_string(context, &length) else { return [] }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
        return DuktapeText.fromEngine(bytes)
    }

    /// The value on top of the stack as text (for errors).
    private func topString() -> String {
        var length = 0
        guard let pointer = couchlite_duk_safe_string(context, &length) else { return "" }
        return String(
            decoding: DuktapeText.fromEngine(UnsafeRawBufferPointer(start: pointer, count: length)), as: UTF8.self)
    }

    /// Bytes the JavaScript heap holds now.
    static var heapBytes: Int { couchlite_duk_used_bytes() }
}
