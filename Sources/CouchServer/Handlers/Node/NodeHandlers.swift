import CouchStore
import CouchWire
import Foundation
import Replicator

/// `/_membership` and `/_node/{node}/…`: the one node couchlite is, its statistics (`_stats`,
/// `_prometheus`) and its system figures (`_system`), for server admins and metrics readers (the route table).
struct NodeHandlers: Sendable {
    /// Names `_node/{node}` answers to: CouchDB's alias for the node serving the request, the name an
    /// Erlang node has when it is not distributed, and `App.nodeName`.
    private static let nodeAliases: Set<String> = ["_local", "nonode@nohost", App.nodeName]

    /// Open databases and the page cache's sharing.
    package let store: Store
    /// The server's id, in the welcome a node named outright answers.
    package let serverUUID: String
    /// Request counters and times.
    let metrics: ServerMetrics
    /// Bytes and connections of the network server.
    let traffic: HTTPTraffic
    /// The replications running and the counters of those finished.
    let replications: ReplicationJobs
    /// The `_replicator` documents' states (crashing jobs).
    let replicatorDatabase: ReplicatorDatabaseSlot
    /// What `_config` shows and changes.
    let configSettings: ConfigSettings

    /// CouchDB answers these to HEAD as to GET but names only GET in its 405 (the route table's `notAllowedReason`).
    func membership(_ c: RequestContext) throws -> Response {
        return .json(.ok, ["all_nodes": [.string(App.nodeName)], "cluster_nodes": [.string(App.nodeName)]])
    }

    /// `GET /_node/{node}`: CouchDB names the node for `_local`; a node named outright answers its own `/` (the
    /// request is handed to that node's local HTTP layer).
    package func root(_ c: RequestContext) throws -> Response {
        guard try Self.requireNode(c) == "_local" else {
            return .json(.ok, ServerHandlers.welcome(serverUUID: serverUUID))
        }
        return .json(.ok, ["name": .string(App.nodeName)])
    }

    /// `GET /_node/{node}/_stats[/group/…]`.
    func stats(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        let path = c.parameters["path"].map { $0.split(separator: "/").map(String.init) } ?? []
        return .json(.ok, MetricTree.extract(path[...], from: statsTree().json))
    }

    /// `GET /_node/{node}/_prometheus`.
    func prometheus(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        var headers = HTTPHeaders()
        headers.set("Content-Type", Self.prometheusContentType)
        return .bytes(.ok, Array(prometheusText().utf8), headers: headers)
    }

    /// `GET /_node/{node}/_system`.
    func system(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        return .json(.ok, systemJSON())
    }

    /// Any other `_node/{node}/…` path: 404, once the node is this one.
    func missing(_ c: RequestContext) throws -> Response {
        try Self.requireNode(c)
        throw CouchError.notFound("missing")
    }

    /// The node a `_node/{node}` route names, which must be this one.
    @discardableResult
    static func requireNode(_ c: RequestContext) throws(CouchError) -> String {
        let node = try c.parameter("node")
        guard nodeAliases.contains(node) else { throw .notFound("no such node: \(node)") }
        return node
    }

    /// Everything `_stats` shows, read now.
    func statsTree() -> MetricTree {
        let jobs = replications.totals
        let states = replicatorDatabase.jobStates.map(\.1.state)
        let crashing = states.count { $0 == "crashing" }
        let pending = states.count { $0 == "pending" }
        let methods = ServerMetrics.methods.enumerated().map { index, method in
            (method, MetricTree.counter(metrics.methodCounts[index], "number of HTTP \(method) requests"))
        }
        let codes = ServerMetrics.statusCodes.enumerated().map { index, code in
            (String(code.code), MetricTree.counter(metrics.statusCounts[index], code.desc))
        }
        let second = ServerMetrics.monotonicSecond()
        return .group([
            (
                "couchdb",
                .group([
                    ("httpd_status_codes", .group(codes)),
                    ("httpd_request_methods", .group(methods)),
                    (
                        "httpd",
                        .group([
                            ("requests", .counter(metrics.requests, "number of HTTP requests")),
                            (
                                "clients_requesting_changes",
                                .counter(metrics.clientsRequestingChanges, "number of clients for continuous _changes")
                            ),
                            (
                                "connections",
                                .counter(traffic.connectionsAccepted, "number of HTTP connections accepted")
                            ),
                            ("open_connections", .gauge(traffic.openConnections, "number of open HTTP connections")),
                            (
                                "bytes_received",
                                .counter(traffic.bytesReceived, "number of bytes read from HTTP clients")
                            ),
                            ("bytes_sent", .counter(traffic.bytesSent, "number of bytes sent to HTTP clients")),
                        ])
                    ),
                    ("open_databases", .counter(store.openDatabaseCount, "number of open databases")),
                    (
                        "open_os_files",
                        .counter(SystemFigures.read().openFiles, "number of file descriptors couchlite has open")
                    ),
                    (
                        "request_time",
                        .histogram(
                            metrics.requestTime.summary(second: second),
                            "length of a request inside couchlite, in milliseconds, over the last 10 seconds")
                    ),
                ])
            ),
            (
                "couch_replicator",
                .group([
                    (
                        "jobs",
                        .group([
                            ("running", .gauge(jobs.running, "replicator scheduler running jobs")),
                            ("pending", .gauge(pending, "replicator scheduler pending jobs")),
                            ("crashed", .gauge(crashing, "replicator scheduler crashed jobs")),
                            (
                                "total",
                                .gauge(jobs.running + pending + crashing, "total number of replicator scheduler jobs")
                            ),
                            ("adds", .counter(jobs.history.adds, "number of jobs added to replicator scheduler")),
                            (
                                "duplicate_adds",
                                .counter(
                                    jobs.history.duplicateAdds, "number of duplicate jobs added to replicator scheduler"
                                )
                            ),
                            ("starts", .counter(jobs.history.adds, "number of jobs started by replicator scheduler")),
                            (
                                "removes",
                                .counter(jobs.history.removes, "number of jobs removed from replicator scheduler")
                            ),
                            (
                                "crashes",
                                .counter(jobs.history.crashes, "number of job crashed noticed by replicator scheduler")
                            ),
                        ])
                    ),
                    (
                        "checkpoints",
                        .group([
                            (
                                "success",
                                .counter(jobs.stats.checkpointsWritten, "number of checkpoints successfully saves")
                            ),
                            ("failure", .counter(jobs.stats.checkpointFailures, "number of failed checkpoint saves")),
                        ])
                    ),
                    ("docs_read", .counter(jobs.stats.docsRead, "number of documents read by replications")),
                    ("docs_written", .counter(jobs.stats.docsWritten, "number of documents written by replications")),
                    (
                        "doc_write_failures",
                        .counter(jobs.stats.docWriteFailures, "number of documents replications failed to write")
                    ),
                ])
            ),
        ])
    }

    /// `_system`: CouchDB's field names where couchlite has the figure, and the process's memory.
    func systemJSON() -> JSON {
        let figures = SystemFigures.read()
        return .object(
            JSONObject([
                ("uptime", .int(metrics.uptimeSeconds)),
                (
                    "memory",
                    [
                        "rss": .int(figures.residentBytes), "rss_peak": .int(figures.peakResidentBytes),
                        "virtual": .int(figures.virtualBytes), "heap_in_use": .int(figures.heapInUseBytes),
                        "heap_free": .int(figures.heapFreeBytes), "heap_mapped": .int(figures.heapMappedBytes),
                        "page_cache_writers": .int(store.pageCache.writers),
                        "page_cache_readers": .int(store.pageCache.readers),
                    ]
                ),
                ("io_input", .int(traffic.bytesReceived)), ("io_output", .int(traffic.bytesSent)),
                ("thread_count", .int(figures.threads)), ("open_os_files", .int(figures.openFiles)),
                ("os_proc_count", 0), ("internal_replication_jobs", 0),
            ]))
    }
}

extension NodeHandlers: RouteCollection {
    package var routes: [Route] {
        let read: [HTTPMethod] = [.GET, .HEAD]
        return [
            Route(read, "/_membership", .serverAdmin, notAllowedReason: "GET", membership),
            Route(HTTPMethod.allCases, "/_node", .serverAdmin) { _ in
                throw CouchError.badRequest("Incomplete path to _node request")
            },
            Route(read, "/_node/{node}", .serverAdmin, notAllowedReason: "GET", root),
            Route(read, "/_node/{node}/_stats", .metricsReader, notAllowedReason: "GET", stats),
            Route(read, "/_node/{node}/_stats/{path…}", .metricsReader, notAllowedReason: "GET", stats),
            Route(read, "/_node/{node}/_prometheus", .metricsReader, notAllowedReason: "GET", prometheus),
            Route(read, "/_node/{node}/_system", .metricsReader, notAllowedReason: "GET", system),
            Route(read, "/_node/{node}/_config", .serverAdmin, notAllowedReason: "GET", config),
            Route(read, "/_node/{node}/_config/{section}", .serverAdmin, notAllowedReason: "GET", configSection),
            Route(
                read, "/_node/{node}/_config/{section}/{key}", .serverAdmin, notAllowedReason: "GET,PUT,DELETE",
                configValue),
            Route([.PUT], "/_node/{node}/_config/{section}/{key}", .serverAdmin, body: .small, setConfigValue),
            Route([.DELETE], "/_node/{node}/_config/{section}/{key}", .serverAdmin, deleteConfigValue),
            Route(HTTPMethod.allCases, "/_node/{node}/{path…}", .serverAdmin, missing),
        ]
    }
}
