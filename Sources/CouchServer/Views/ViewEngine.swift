import CouchWire

/// One row a map function emitted.
struct Emit: Sendable {
    var key: JSON
    var value: JSON
}

/// The JavaScript side of views: map functions and JavaScript reduce functions run in the engine (Duktape worker
/// processes, the js-engine branch); built-in reduces never come here. Kept behind this protocol so the index and
/// the queries are tested without JavaScript (`Tests/CouchServerTests/FakeViewEngine`).
protocol ViewEngine: Sendable {
    /// Maps `documents` (as CouchDB passes them: `_id`, `_rev`, fields, attachment stubs, `_conflicts`) with
    /// every view of `group`: `result[d][v]` is what view `v`'s map function emitted for document `d`.
    /// A function that throws for one document emits nothing for it (CouchDB logs and skips it).
    func map(_ group: ViewGroup, _ documents: [JSON]) throws -> [[[Emit]]]

    /// Runs the JavaScript `reduce` of view `view` over map rows (`[[key, docid], value]` pairs).
    func reduce(_ group: ViewGroup, view: Int, keys: [JSON], values: [JSON]) throws -> JSON

    /// Rereduces partial results of view `view`.
    func rereduce(_ group: ViewGroup, view: Int, values: [JSON]) throws -> JSON
}

/// The engine until one is installed: every map or JavaScript reduce is a clear 500, not a silent empty view.
struct UnavailableViewEngine: ViewEngine {
    static let reason = "couchlite was built without its JavaScript engine: views cannot run map functions."

    func map(_ group: ViewGroup, _ documents: [JSON]) throws -> [[[Emit]]] {
        throw CouchError.unknownError(UnavailableViewEngine.reason)
    }

    func reduce(_ group: ViewGroup, view: Int, keys: [JSON], values: [JSON]) throws -> JSON {
        throw CouchError.unknownError(UnavailableViewEngine.reason)
    }

    func rereduce(_ group: ViewGroup, view: Int, values: [JSON]) throws -> JSON {
        throw CouchError.unknownError(UnavailableViewEngine.reason)
    }
}
