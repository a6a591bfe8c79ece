import CouchQuery
import CouchWire

/// `POST /db/_explain`: the plan in CouchDB 3.4's shape (`mango_cursor:explain/1` and
/// `mango_cursor_view:explain/1`): the chosen index, the normalized selector, the options, the other candidate
/// indexes with why they lost, the selector's indexable fields, and the view arguments the query runs with.
struct MangoExplain {
    var database: String
    var options: FindOptions
    var plan: MangoPlan

    var json: JSON {
        let selector = options.selector.normalized
        let indexable = MangoRanges.indexableFields(selector)
        let unindexable = MangoRanges.fields(selector).filter { !indexable.contains($0) }
        let hints = JSONObject([
            ("type", "json"), ("indexable_fields", .array(indexable.map(JSON.string))),
            ("unindexable_fields", .array(unindexable.map(JSON.string))),
        ])
        let covering = MangoCandidates.covers(plan.index, fields: options.fields, selector: selector)
        return .object(
            JSONObject([
                ("dbname", .string(database)), ("index", plan.index.json), ("partitioned", false),
                ("selector", selector), ("opts", options.explainJSON), ("limit", .int(options.limit)),
                ("skip", .int(options.skip)), ("fields", .array(options.fields.map(JSON.string))),
                ("index_candidates", .array(plan.candidates)), ("selector_hints", [.object(hints)]),
                ("mrargs", mrargs(covering: covering)), ("covering", .bool(covering)),
            ]))
    }

    /// The view arguments (`#mrargs{}`), with `<MAX>` for the key above every other.
    private func mrargs(covering: Bool) -> JSON {
        var start: JSON
        var end: JSON
        if plan.ranges == nil {
            (start, end) = (.null, .null)
        } else if plan.index.isSpecial {
            start = plan.startKey.first ?? .null
            end = plan.endKey.first ?? "<MAX>"
        } else {
            start = .array(plan.startKey)
            end = .array(plan.endKey + ["<MAX>"])
        }
        if options.sort.descending { swap(&start, &end) }
        let stable = options.stable || options.stale
        return .object(
            JSONObject([
                ("include_docs", .bool(!covering && options.r == 1)), ("view_type", "map"), ("reduce", false),
                ("partition", .null), ("start_key", start), ("end_key", end),
                ("direction", options.sort.descending ? "rev" : "fwd"), ("stable", .bool(stable)),
                ("update", .bool(options.update && !options.stale)),
                ("conflicts", options.conflicts ? true : "undefined"),
            ]))
    }
}
