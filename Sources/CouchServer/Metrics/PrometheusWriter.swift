import Foundation

/// Accumulates metric families in the text exposition format.
struct PrometheusWriter {
    private(set) var text = ""

    /// Metrics whose CouchDB stats type is `counter` but which go up and down: Prometheus gauges.
    private static let gauges: Set<String> = ["open_databases", "open_os_files", "httpd_clients_requesting_changes"]

    mutating func family(_ name: String, _ kind: MetricTree.Kind, _ help: String, _ samples: [(String, String)]) {
        let type = kind == .histogram ? "summary" : kind.rawValue
        text += "\n# HELP \(name) \(Self.escapedHelp(help))\n# TYPE \(name) \(type)\n"
        for (labels, value) in samples {
            text += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
        }
    }

    mutating func walk(_ tree: MetricTree, path: [String]) {
        let name = path.joined(separator: "_")
        switch tree {
        case .group(let children):
            if name == "httpd_request_methods" || name == "httpd_status_codes" {
                return labelled(name, children, label: name == "httpd_request_methods" ? "method" : "code")
            }
            if name == "couch_replicator_checkpoints" { return checkpoints(children) }
            for (child, subtree) in children { walk(subtree, path: path + [child]) }
        case .counter(let value, let desc):
            if Self.gauges.contains(name) {
                family("couchdb_" + name, .gauge, desc, [("", String(value))])
            } else {
                family(
                    "couchdb_" + (name.hasSuffix("_total") ? name : name + "_total"), .counter, desc,
                    [("", String(value))])
            }
        case .gauge(let value, let desc):
            family("couchdb_" + name, .gauge, desc, [("", String(value))])
        case .histogram(let summary, let desc):
            let metric = "couchdb_\(name)_seconds"
            let quantiles = zip(HistogramSummary.percentiles, summary.percentileValues).map { percentile, value in
                ("quantile=\"\(Self.quantile(percentile.fraction))\"", Self.number(value / 1000))
            }
            family(metric, .histogram, desc, quantiles)
            text += "\(metric)_sum \(Self.number(summary.sum / 1000))\n\(metric)_count \(summary.n)\n"
        }
    }

    /// `couchdb_httpd_request_methods{method="GET"}`: one family, a label per child.
    private mutating func labelled(_ name: String, _ children: [(String, MetricTree)], label: String) {
        let samples = children.compactMap { key, tree -> (String, String)? in
            guard case .counter(let value, _) = tree else { return nil }
            return ("\(label)=\"\(key)\"", String(value))
        }
        let help = label == "method" ? "number of HTTP requests by method" : "number of HTTP responses by status code"
        family("couchdb_" + name, .counter, help, samples)
    }

    /// CouchDB's checkpoint families: all saves (`_total`, successes and failures) and the failures.
    private mutating func checkpoints(_ children: [(String, MetricTree)]) {
        var values: [String: Int] = [:]
        for (key, tree) in children { if case .counter(let value, _) = tree { values[key] = value } }
        let success = values["success"] ?? 0
        let failure = values["failure"] ?? 0
        family(
            "couchdb_couch_replicator_checkpoints_total", .counter, "number of checkpoint saves",
            [("", String(success + failure))])
        family(
            "couchdb_couch_replicator_checkpoints_failure_total", .counter, "number of failed checkpoint saves",
            [("", String(failure))])
    }

    static func quantile(_ fraction: Double) -> String { number(fraction) }

    /// A sample value: integers without a fraction, others as Swift's shortest round-tripping text.
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) + ".0" }
        return value.description
    }

    /// Help text escapes backslashes and newlines.
    static func escapedHelp(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }
}
