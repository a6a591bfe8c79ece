import CouchWire

/// `_node/_local/_prometheus`: the `_stats` tree in the Prometheus text format, named as CouchDB names it
/// (`couchdb_` + the path joined by `_`; counters end in `_total`; histograms are summaries in seconds),
/// then the process figures.
///
/// CouchDB 3.4.3 separates each `# HELP` line from its `# TYPE` line with a bare `\r`, which Prometheus
/// reads as part of the help text (the type is lost); couchlite writes `\n` there.
extension NodeHandlers {
    /// The `Content-Type` CouchDB sends it with.
    static let prometheusContentType = "text/plain; version=2.0"

    /// The whole exposition, read now.
    func prometheusText() -> String {
        var out = PrometheusWriter()
        guard case .group(let top) = statsTree() else { return "" }
        for (name, tree) in top {
            // CouchDB drops the `couchdb` group from its names (`couchdb_httpd_…`, not `couchdb_couchdb_…`).
            out.walk(tree, path: name == "couchdb" ? [] : [name])
        }
        let figures = SystemFigures.read()
        out.family("couchdb_uptime_seconds", .counter, "couchdb uptime", [("", String(metrics.uptimeSeconds))])
        out.family(
            "couchdb_membership", .gauge, "count of nodes in the cluster",
            [("nodes=\"cluster_nodes\"", "1"), ("nodes=\"all_nodes\"", "1")])
        out.family(
            "process_resident_memory_bytes", .gauge, "resident memory size in bytes",
            [("", String(figures.residentBytes))])
        out.family(
            "process_virtual_memory_bytes", .gauge, "virtual memory size in bytes", [("", String(figures.virtualBytes))]
        )
        out.family("process_open_fds", .gauge, "number of open file descriptors", [("", String(figures.openFiles))])
        out.family("process_threads", .gauge, "number of threads", [("", String(figures.threads))])
        return out.text
    }
}
