/// Why a call into the JavaScript query server failed. The server turns each into a CouchDB-style error;
/// none of them leaves a worker in doubt (a worker that timed out or misbehaved is killed and replaced).
public enum QueryServerError: Error, Equatable, Sendable {
    /// The call ran past its time limit; the worker running it was killed (CouchDB: `os_process_error`).
    case timeout(seconds: Double)
    /// The worker died, could not be started, or broke the protocol (oversized, truncated or malformed
    /// message); it was killed and will be replaced.
    case workerFailed(String)
    /// A function's source did not compile or did not evaluate to a function (CouchDB: `compilation_error`).
    case compilation(String)
    /// The function threw: `error` is the thrown error's name (`TypeError`, `unnamed_error`, or the `error`
    /// member of a thrown `{error, reason}` object), `reason` its message or the thrown value's JSON.
    case function(error: String, reason: String)

    /// The CouchDB `error` string of this failure.
    public var error: String {
        switch self {
        case .timeout: "os_process_error"
        case .workerFailed: "os_process_error"
        case .compilation: "compilation_error"
        case .function(let error, _): error
        }
    }

    /// The CouchDB `reason` string of this failure.
    public var reason: String {
        switch self {
        case .timeout(let seconds): "OS process timed out after \(seconds) s."
        case .workerFailed(let detail): "The JavaScript query server failed: \(detail)"
        case .compilation(let reason): reason
        case .function(_, let reason): reason
        }
    }
}
