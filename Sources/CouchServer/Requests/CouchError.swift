import CouchStore
import CouchWire

/// Every failure a client can see, mapped to CouchDB's status, `error` and `reason` in one place
/// (chttpd's `error_info/1`). Anything that is not a `CouchError` becomes a logged 500.
package enum CouchError: Error, Equatable {
    case badRequest(String)
    case docValidation(String)
    case invalidJSON
    case notAnObject
    case invalidRev
    case illegalDocID(String)
    case illegalDatabaseName(String)
    case unauthorized(String)
    case forbidden(String)
    case dbNotFound
    case notFound(String)
    case methodNotAllowed(String)
    case conflict
    case fileExists
    case missingStub(String)
    /// Attachment bytes that do not hash to the digest the client sent (couch_httpd's
    /// `content_md5_mismatch`; CouchDB 3's clustered interface lets it escape as a 500).
    case contentMD5Mismatch
    case preconditionFailed(String)
    case tooLarge(String)
    case documentTooLarge(String)
    case badContentType(String)
    case notImplemented(String)
    /// 410 `gone`: an endpoint CouchDB 3 removed (`_temp_view`).
    case gone(String)
    case rangeNotSatisfiable
    case queryParseError(String)
    /// A 500 whose reason is a fixed, safe text written for the client.
    case unknownError(String)
    /// A 500 caused by something the client must not see (file paths, SQLite messages): the detail is
    /// logged by `App.handle`, the client gets a generic reason.
    case internalError(String)
    /// The disk is full (ENOSPC, SQLite's "database or disk is full"): 507, as CouchDB answers it.
    case insufficientStorage
    /// 503 `service_unavailable`: the server is busy (its budget for request bodies is taken); retry later.
    case serviceUnavailable(String)
    /// 500 `invalid_value`: a built-in reduce given values it cannot reduce (`_stats` of a string).
    case invalidValue(String)
    /// A design function's failure as CouchDB reports it: the error a function threw (`unknown_error`, an
    /// `Error`'s name), `compilation_error`, or `os_process_error` for a worker that timed out or died.
    case designFunction(status: Int, error: String, reason: String)

    var status: Int {
        switch self {
        case .badRequest, .docValidation, .contentMD5Mismatch, .invalidJSON, .notAnObject, .invalidRev, .illegalDocID,
            .illegalDatabaseName, .queryParseError:
            400
        case .unauthorized: 401
        case .forbidden: 403
        case .dbNotFound, .notFound: 404
        case .methodNotAllowed: 405
        case .conflict: 409
        case .gone: 410
        case .fileExists, .missingStub, .preconditionFailed: 412
        case .tooLarge, .documentTooLarge: 413
        case .badContentType: 415
        case .rangeNotSatisfiable: 416
        case .unknownError, .internalError, .invalidValue: 500
        case .notImplemented: 501
        case .insufficientStorage: 507
        case .serviceUnavailable: 503
        case .designFunction(let status, _, _): status
        }
    }

    package var error: String {
        switch self {
        case .badRequest, .invalidJSON, .notAnObject, .invalidRev: "bad_request"
        case .docValidation: "doc_validation"
        case .contentMD5Mismatch: "content_md5_mismatch"
        case .illegalDocID: "illegal_docid"
        case .illegalDatabaseName: "illegal_database_name"
        case .queryParseError: "query_parse_error"
        case .unauthorized: "unauthorized"
        case .forbidden: "forbidden"
        case .dbNotFound, .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .conflict: "conflict"
        case .fileExists: "file_exists"
        case .missingStub: "missing_stub"
        case .preconditionFailed: "precondition_failed"
        case .tooLarge: "too_large"
        case .documentTooLarge: "document_too_large"
        case .badContentType: "bad_content_type"
        case .rangeNotSatisfiable: "requested_range_not_satisfiable"
        case .notImplemented: "not_implemented"
        case .unknownError, .internalError: "unknown_error"
        case .insufficientStorage: "insufficient_storage"
        case .serviceUnavailable: "service_unavailable"
        case .gone: "gone"
        case .invalidValue: "invalid_value"
        case .designFunction(_, let error, _): error
        }
    }

    var reason: String {
        switch self {
        case .badRequest(let reason), .docValidation(let reason), .illegalDocID(let reason), .unauthorized(let reason),
            .forbidden(let reason), .notFound(let reason), .missingStub(let reason), .preconditionFailed(let reason),
            .tooLarge(let reason), .documentTooLarge(let reason), .badContentType(let reason),
            .notImplemented(let reason), .gone(let reason), .queryParseError(let reason), .unknownError(let reason),
            .invalidValue(let reason), .serviceUnavailable(let reason):
            reason
        case .invalidJSON: "invalid UTF-8 JSON"
        case .contentMD5Mismatch: "Possible message corruption."
        case .notAnObject: "Document must be a JSON object"
        case .invalidRev: "Invalid rev format"
        case .illegalDatabaseName(let name):
            "Name: '\(name)'. Only lowercase characters (a-z), digits (0-9), and any of the characters _, $, (, ), +, -, and / are allowed. Must begin with a letter."
        case .dbNotFound: "Database does not exist."
        case .methodNotAllowed(let allowed): "Only \(allowed) allowed"
        case .conflict: "Document update conflict."
        case .fileExists: "The database could not be created, the file already exists."
        case .rangeNotSatisfiable: "Requested range not satisfiable"
        case .internalError: "An internal error occurred; the server log has the details."
        case .insufficientStorage: "There is not enough free space on the server's disk."
        case .designFunction(_, _, let reason): reason
        }
    }

    /// The `{"error","reason"}` body.
    package var json: JSON {
        .object(JSONObject([("error", .string(error)), ("reason", .string(reason))]))
    }
}

extension CouchError {
    /// Maps a store failure onto the wire.
    package init(_ storeError: StoreError) {
        switch storeError {
        case .conflict: self = .conflict
        case .notFound(let reason): self = .notFound(reason)
        case .missingStub(let name): self = .missingStub("Invalid attachment stub in \(name)")
        case .invalidRev: self = .invalidRev
        case .badRequest(let reason): self = .badRequest(reason)
        case .invalidDocID(let reason): self = .illegalDocID(reason)
        case .fileExists: self = .fileExists
        case .dbNotFound: self = .dbNotFound
        case .documentTooLarge(let reason): self = .documentTooLarge(reason)
        case .internalError(let detail):
            self = StorageFailure.isDiskFull(storeError) ? .insufficientStorage : .internalError(detail)
        }
    }

    /// Maps any other failure onto the wire without letting its text reach the client: store errors as
    /// above, a full disk as 507, anything else as a logged 500 with a generic reason.
    package init(unexpected error: any Error) {
        if let error = error as? CouchError {
            self = error
        } else if let error = error as? StoreError {
            self = CouchError(error)
        } else if let error = error as? HTTPError {
            self = CouchError(error)
        } else if StorageFailure.isDiskFull(error) {
            self = .insufficientStorage
        } else {
            self = .internalError(String(describing: error))
        }
    }

    /// Maps a store failure of document `docID` onto the wire, in CouchDB's words where they name the document
    /// (`couch_doc:merge_stubs`: "Invalid attachment stub in <doc> for <attachment>").
    package init(_ storeError: StoreError, docID: String) {
        if case .missingStub(let name) = storeError {
            self = .missingStub("Invalid attachment stub in \(docID) for \(name)")
        } else {
            self.init(storeError)
        }
    }

    /// Maps an HTTP body-reading failure onto the wire: a body that did not arrive within `--body-timeout` (or
    /// stalled) is 408 `request_timeout`, the engine's answer to a late head too (CouchDB's mochiweb closes the
    /// connection without an answer).
    package init(_ httpError: HTTPError) {
        switch httpError.status {
        case 413: self = .tooLarge("Request body is too large")
        case 400: self = .badRequest(httpError.reason)
        case 408:
            self = .designFunction(
                status: 408, error: "request_timeout", reason: "The request body did not arrive in time.")
        default: self = .unknownError(httpError.reason)
        }
    }
}
