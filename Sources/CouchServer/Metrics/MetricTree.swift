import CouchWire

/// The statistics of `_node/_local/_stats`, as CouchDB nests them: groups of groups whose leaves are
/// `{"value", "type", "desc"}`. `_prometheus` renders the same tree.
indirect enum MetricTree {
    enum Kind: String { case counter, gauge, histogram }

    case counter(Int, String)
    case gauge(Int, String)
    case histogram(HistogramSummary, String)
    case group([(String, MetricTree)])

    package var json: JSON {
        switch self {
        case .counter(let value, let desc): Self.leaf(.int(value), .counter, desc)
        case .gauge(let value, let desc): Self.leaf(.int(value), .gauge, desc)
        case .histogram(let summary, let desc): Self.leaf(summary.json, .histogram, desc)
        case .group(let children): .object(JSONObject(children.map { ($0.0, $0.1.json) }))
        }
    }

    private static func leaf(_ value: JSON, _ kind: Kind, _ desc: String) -> JSON {
        .object(JSONObject([("value", value), ("type", .string(kind.rawValue)), ("desc", .string(desc))]))
    }

    /// CouchDB's sub-path lookup (`_stats/couchdb/request_time/value/n`): each segment names a key of the
    /// JSON below, leaves included; a path that leads nowhere is `null`.
    static func extract(_ path: ArraySlice<String>, from json: JSON) -> JSON {
        var current = json
        for segment in path where !segment.isEmpty {
            guard let next = current[segment] else { return .null }
            current = next
        }
        return current
    }
}
