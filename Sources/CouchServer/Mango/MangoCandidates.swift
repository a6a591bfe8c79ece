import CouchWire

/// `_explain`'s `index_candidates` (`mango_cursor:extract_candidate_indexes/1`): every index but the winner,
/// with why it lost and a ranking (1 is the closest runner-up). Indexes of the winner's kind rank by their place
/// in the planner's order; then come, each group one rank lower, other kinds (`unfavored_type`), indexes
/// `use_index` left out (`excluded_by_user`), unusable ones (their reasons), and partial indexes (`is_partial`).
struct MangoCandidates {
    var all: [MangoIndex]
    var global: [MangoIndex]
    var verdicts: [(MangoIndex, [String])]
    var usable: [MangoIndex]
    var chosenFrom: [MangoIndex]
    var ranked: [(index: MangoIndex, prefix: [MangoRange?], difference: Int)]
    var winner: MangoIndex
    var fields: [String]
    var selector: JSON

    var json: [JSON] {
        func contains(_ list: [MangoIndex], _ index: MangoIndex) -> Bool {
            list.contains { MangoPlanner.same($0, index) }
        }
        let ofType = ranked.map(\.index)
        let unfavored = chosenFrom.filter { !contains(ofType, $0) }
        let excluded = usable.filter { !contains(chosenFrom, $0) }
        let notUsable = verdicts.filter { !$0.1.isEmpty }
        let partial = all.filter { !contains(global, $0) && !contains(verdicts.map(\.0), $0) }
        let unfavoredRank = max(1, ranked.count)
        let excludedRank = unfavoredRank + (unfavored.isEmpty ? 0 : 1)
        let notUsableRank = excludedRank + (excluded.isEmpty ? 0 : 1)
        let partialRank = notUsableRank + (notUsable.isEmpty ? 0 : 1)
        var out: [JSON] = []
        func add(_ index: MangoIndex, usable: Bool, _ reasons: [String], _ ranking: Int) {
            guard !MangoPlanner.same(index, winner) else { return }
            let covering: JSON = index.isSpecial ? .null : .bool(covers(index))
            let analysis = JSONObject([
                ("usable", .bool(usable)),
                ("reasons", .array(reasons.map { .object(JSONObject([("name", .string($0))])) })),
                ("ranking", .int(ranking)), ("covering", covering),
            ])
            out.append(.object(JSONObject([("index", index.json), ("analysis", .object(analysis))])))
        }
        let best = ranked.first
        for (position, entry) in ranked.enumerated() {
            guard let best else { break }
            let reason =
                entry.difference > best.difference
                ? "less_overlap"
                : entry.index.columns.count > best.index.columns.count
                    ? "too_many_fields" : "alphabetically_comes_after"
            add(entry.index, usable: true, [reason], position)
        }
        for index in unfavored { add(index, usable: true, ["unfavored_type"], unfavoredRank) }
        for index in excluded { add(index, usable: true, ["excluded_by_user"], excludedRank) }
        // CouchDB names the first reason only (field_mismatch before sort_order_mismatch).
        for (index, reasons) in notUsable { add(index, usable: false, Array(reasons.prefix(1)), notUsableRank) }
        for index in partial { add(index, usable: false, ["is_partial"], partialRank) }
        return out
    }

    /// `mango_idx_view:covers/2`: the index alone holds every field the query needs.
    private func covers(_ index: MangoIndex) -> Bool {
        MangoCandidates.covers(index, fields: fields, selector: selector)
    }

    static func covers(_ index: MangoIndex, fields: [String], selector: JSON) -> Bool {
        guard !fields.isEmpty, !index.isSpecial else { return false }
        let available = Set(["_id"] + index.columns)
        return Set(fields + MangoRanges.fields(selector)).isSubset(of: available)
    }
}
