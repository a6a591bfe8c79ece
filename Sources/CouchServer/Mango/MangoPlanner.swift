import CouchQuery
import CouchWire

/// Index selection as CouchDB's (`mango_idx:get_usable_indexes/4`, `mango_cursor:create/4`,
/// `mango_cursor_view:choose_best_index/1`): an index is usable when the selector requires every one of its
/// columns to exist (sort fields, `_id` and `_rev` excepted) and it can give the sort order; indexes with a
/// partial filter are only used when `use_index` names them; json indexes are preferred over `_all_docs`; among
/// them the one whose columns cover the longest prefix of the selector's indexable fields, then the one with
/// fewer columns, then the first by (design document, name).
struct MangoPlan: Sendable {
    var index: MangoIndex
    /// Ranges of the index's leading columns; nil when the selector can match nothing.
    var ranges: [MangoRange]?
    var candidates: [JSON]
    var warnings: [String]

    /// The range of `_id` for `_all_docs` (`mango_cursor_special`), or of the columns for a json index.
    var startKey: [JSON] { MangoRanges.startKey(ranges ?? []) }
    var endKey: [JSON] { MangoRanges.endKey(ranges ?? []) }
}

enum MangoPlanner {
    static func plan(_ options: FindOptions, indexes: [MangoIndex]) throws(CouchError) -> MangoPlan {
        let selector = options.selector.normalized
        let sortFields = options.sort.fields
        let global = indexes.filter { $0.partialFilter == nil }
        let named = filter(indexes, options.useIndex)
        var pool = global
        for index in named where !pool.contains(where: { same($0, index) }) { pool.append(index) }
        let verdicts = pool.map { ($0, usability($0, selector, sortFields)) }
        let usable = verdicts.filter { $0.1.isEmpty }.map(\.0)
        guard !usable.isEmpty else {
            throw .mango("no_usable_index", "No index exists for this sort, try indexing by the sort fields.")
        }
        var chosenFrom = filter(usable, options.useIndex)
        if chosenFrom.isEmpty {
            guard options.allowFallback || (options.useIndex.isEmpty && usable.count > 1) else {
                throw invalidIndex(options.useIndex)
            }
            chosenFrom = usable
        }
        let ofType = chosenFrom.contains { !$0.isSpecial } ? chosenFrom.filter { !$0.isSpecial } : chosenFrom
        let fieldRanges = MangoRanges.fieldRanges(selector)
        let ranked = ofType.map { index in
            let prefix = prefixRanges(index.columns, fieldRanges)
            return (index: index, prefix: prefix, difference: fieldRanges.count - prefix.count)
        }.sorted { a, b in
            if a.difference != b.difference { return a.difference < b.difference }
            if a.index.columns.count != b.index.columns.count { return a.index.columns.count < b.index.columns.count }
            return order(a.index, b.index)
        }
        // `ranked` is never empty: `ofType` is a non-empty subset of `usable`.
        let best = ranked[0]
        var ranges: [MangoRange]? = best.prefix.contains(where: { $0 == nil }) ? nil : best.prefix.compactMap { $0 }
        if isNoop(selector) { ranges = nil }
        var warnings: [String] = []
        if let warning = invalidIndexWarning(best.index, options.useIndex) { warnings.append(warning) }
        if best.index.isSpecial {
            warnings.append("No matching index found, create an index to optimize query time.")
        }
        let candidates = MangoCandidates(
            all: indexes, global: global, verdicts: verdicts, usable: usable, chosenFrom: chosenFrom, ranked: ranked,
            winner: best.index, fields: options.fields, selector: selector
        ).json
        return MangoPlan(index: best.index, ranges: ranges, candidates: candidates, warnings: warnings)
    }

    static func same(_ a: MangoIndex, _ b: MangoIndex) -> Bool { a.designID == b.designID && a.name == b.name }

    /// Erlang term order of `{ddoc, name}`: the atom `null` of `_all_docs` sorts before binaries.
    static func order(_ a: MangoIndex, _ b: MangoIndex) -> Bool {
        switch (a.designID, b.designID) {
        case (nil, nil): return false
        case (nil, _): return true
        case (_, nil): return false
        case (let left?, let right?):
            if left != right { return left.utf8.lexicographicallyPrecedes(right.utf8) }
            return a.name.utf8.lexicographicallyPrecedes(b.name.utf8)
        }
    }

    /// The reasons an index cannot serve the query (`is_usable/3`); empty when it can.
    static func usability(_ index: MangoIndex, _ selector: JSON, _ sortFields: [String]) -> [String] {
        if index.isSpecial {
            guard !sortFields.isEmpty else { return [] }
            var reasons: [String] = []
            if !MangoRanges.indexableFields(selector).contains("_id") { reasons.append("field_mismatch") }
            if !canUseSort(["_id"], sortFields, selector) { reasons.append("sort_order_mismatch") }
            return reasons
        }
        let required = Set(index.columns).subtracting(sortFields).subtracting(["_id", "_rev"])
        var reasons: [String] = []
        if isTextSearch(selector) { reasons.append("needs_text_search") }
        if !MangoRanges.hasRequiredFields(selector, Array(required)) { reasons.append("field_mismatch") }
        if !canUseSort(index.columns, sortFields, selector) { reasons.append("sort_order_mismatch") }
        return reasons
    }

    /// `can_use_sort/3`: the sort is a prefix of the columns once constant leading columns are dropped.
    static func canUseSort(_ columns: [String], _ sortFields: [String], _ selector: JSON) -> Bool {
        var columns = columns[...]
        guard !sortFields.isEmpty else { return true }
        while let first = columns.first {
            if first == sortFields[0] { return columns.starts(with: sortFields) }
            guard MangoRanges.isConstant(selector, first) else { return false }
            columns = columns.dropFirst()
        }
        return false
    }

    private static func isTextSearch(_ selector: JSON) -> Bool {
        guard let (key, value) = SelectorNormalizer.single(selector) else { return false }
        if key == "$default" { return true }
        if case .array(let items) = value { return items.contains(where: isTextSearch) }
        return isTextSearch(value)
    }

    /// `composite_prefix/2`: the ranges of the leading columns the selector constrains (nil: an empty range).
    private static func prefixRanges(_ columns: [String], _ ranges: [(field: String, range: MangoRange?)])
        -> [MangoRange?]
    {
        var prefix: [MangoRange?] = []
        for column in columns {
            guard let found = ranges.first(where: { $0.field == column }) else { break }
            prefix.append(found.range)
        }
        return prefix
    }

    /// `maybe_noop_range/2`: `{"$or":[]}`, `{"$and":[]}`, `{"$in":[]}`, `{"$all":[]}` select nothing.
    private static func isNoop(_ selector: JSON) -> Bool {
        guard let (key, value) = SelectorNormalizer.single(selector), value.arrayValue?.isEmpty == true else {
            return false
        }
        return ["$all", "$and", "$or", "$in"].contains(key)
    }

    /// `maybe_filter_indexes_by_ddoc/2`.
    static func filter(_ indexes: [MangoIndex], _ useIndex: [String]) -> [MangoIndex] {
        guard let design = useIndex.first else { return [] }
        let id = design.hasPrefix("_design/") ? design : "_design/" + design
        return indexes.filter { $0.designID == id && (useIndex.count < 2 || $0.name == useIndex[1]) }
    }

    private static func designName(_ design: String) -> String {
        design.hasPrefix("_design/") ? String(design.dropFirst("_design/".count)) : design
    }

    private static func invalidIndex(_ useIndex: [String]) -> CouchError {
        switch useIndex.count {
        case 0: return .mango("invalid_index", "You must specify an index with the `use_index` parameter.")
        case 1:
            return .mango(
                "invalid_index",
                "_design/\(designName(useIndex[0])) specified by `use_index` could not be found or it is not suitable.")
        default:
            return .mango(
                "invalid_index",
                "_design/\(designName(useIndex[0])), \(useIndex[1]) specified by `use_index` could not be found or it "
                    + "is not suitable.")
        }
    }

    private static func invalidIndexWarning(_ chosen: MangoIndex, _ useIndex: [String]) -> String? {
        guard !useIndex.isEmpty, filter([chosen], useIndex).isEmpty else { return nil }
        if useIndex.count == 1 {
            return "_design/\(designName(useIndex[0])) was not used because it does not contain a valid index for "
                + "this query."
        }
        return "_design/\(designName(useIndex[0])), \(useIndex[1]) was not used because it is not a valid index for "
            + "this query."
    }
}
