import Foundation
import Synchronization

/// The server's request statistics for `_node/_local/_stats` and `_prometheus`, in CouchDB's names.
///
/// Everything a request touches is a relaxed atomic (one add for its method, one for its status, two for
/// its time), so counting costs no lock on the request path. Only requests from the network count:
/// the replicator's in-process requests to local databases are internal, like CouchDB's fabric calls.
final class ServerMetrics: Sendable {
    /// The methods CouchDB counts (`couchdb.httpd_request_methods`); others are counted in `requests` only.
    static let methods = ["COPY", "DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]
    /// The status codes CouchDB counts (`couchdb.httpd_status_codes`), with its descriptions.
    static let statusCodes: [(code: Int, desc: String)] = [
        (200, "number of HTTP 200 OK responses"), (201, "number of HTTP 201 Created responses"),
        (202, "number of HTTP 202 Accepted responses"), (204, "number of HTTP 204 No Content responses"),
        (206, "number of HTTP 206 Partial Content"), (301, "number of HTTP 301 Moved Permanently responses"),
        (302, "number of HTTP 302 Found responses"), (304, "number of HTTP 304 Not Modified responses"),
        (400, "number of HTTP 400 Bad Request responses"), (401, "number of HTTP 401 Unauthorized responses"),
        (403, "number of HTTP 403 Forbidden responses"), (404, "number of HTTP 404 Not Found responses"),
        (405, "number of HTTP 405 Method Not Allowed responses"),
        (406, "number of HTTP 406 Not Acceptable responses"), (409, "number of HTTP 409 Conflict responses"),
        (412, "number of HTTP 412 Precondition Failed responses"),
        (413, "number of HTTP 413 Request Entity Too Long responses"),
        (414, "number of HTTP 414 Request URI Too Long responses"),
        (415, "number of HTTP 415 Unsupported Media Type responses"),
        (416, "number of HTTP 416 Requested Range Not Satisfiable responses"),
        (417, "number of HTTP 417 Expectation Failed responses"),
        (500, "number of HTTP 500 Internal Server Error responses"),
        (501, "number of HTTP 501 Not Implemented responses"),
        (503, "number of HTTP 503 Service unavailable responses"),
        (507, "number of HTTP 507 Insufficient Storage responses"),
    ]
    private static let statusIndex: [Int: Int] = Dictionary(
        uniqueKeysWithValues: statusCodes.enumerated().map { ($1.code, $0) })

    let methodCounts = AtomicCounters(count: methods.count)
    let statusCounts = AtomicCounters(count: statusCodes.count)
    /// Requests of any method, and responses of any status, since start.
    private let totals = AtomicCounters(count: 2)
    /// `_changes` feeds that wait for changes (continuous, longpoll, eventsource) open now.
    private let changesClients = Atomic<Int>(0)
    /// Milliseconds from the request head to the end of the response, over the last 10 seconds.
    let requestTime = LatencyHistogram(window: 10)
    /// When the server started, on the monotonic clock (for `uptime`).
    let startedAt = ContinuousClock.now

    var requests: Int { totals[0] }
    var clientsRequestingChanges: Int { changesClients.load(ordering: .relaxed) }

    /// At the start of a network request (CouchDB counts the request it is answering, too).
    func requestStarted(method: String) {
        totals.add(0)
        if let index = Self.methods.firstIndex(of: method) { methodCounts.add(index) }
    }

    /// Once a network request is answered.
    func requestFinished(status: Int, milliseconds: Double) {
        totals.add(1)
        if let index = Self.statusIndex[status] { statusCounts.add(index) }
        requestTime.record(milliseconds, second: Self.monotonicSecond())
    }

    /// Brackets a feed that waits for changes.
    func changesFeedOpened() { changesClients.add(1, ordering: .relaxed) }
    func changesFeedClosed() { changesClients.subtract(1, ordering: .relaxed) }

    var uptimeSeconds: Int { Int((ContinuousClock.now - startedAt).components.seconds) }

    /// Whole seconds of the monotonic clock: the histogram's time rows.
    static func monotonicSecond() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int(now.tv_sec)
    }
}
