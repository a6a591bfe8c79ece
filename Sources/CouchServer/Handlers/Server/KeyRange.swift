import CouchWire

/// The `startkey`/`endkey` family of query parameters over string keys (`_all_dbs`, `_all_docs`).
struct KeyRange {
    var startKey: String?
    var endKey: String?
    var inclusiveEnd = true
    var descending = false

    init(startKey: String? = nil, endKey: String? = nil, inclusiveEnd: Bool = true, descending: Bool = false) {
        self.startKey = startKey
        self.endKey = endKey
        self.inclusiveEnd = inclusiveEnd
        self.descending = descending
    }

    init(_ query: QueryParameters) throws(CouchError) {
        descending = try query.viewBool("descending")
        inclusiveEnd = try query.viewBool("inclusive_end", default: true)
        startKey = try KeyRange.stringKey(query, "startkey", "start_key")
        endKey = try KeyRange.stringKey(query, "endkey", "end_key")
        if let key = try KeyRange.stringKey(query, "key") {
            startKey = key
            endKey = key
            inclusiveEnd = true
        }
    }

    /// Reads a JSON-encoded string key, trying each spelling.
    static func stringKey(_ query: QueryParameters, _ names: String...) throws(CouchError) -> String? {
        for name in names {
            guard let value = try query.json(name) else { continue }
            guard let string = value.stringValue else {
                throw .queryParseError("Invalid \(name) value: keys must be strings here")
            }
            return string
        }
        return nil
    }

    /// Whether `key` falls inside the range, in the direction of iteration.
    package func contains(_ key: String) -> Bool {
        let k = Array(key.utf8)
        if descending {
            if let start = startKey, k.lexicographicallyPrecedes(Array(start.utf8)) == false, k != Array(start.utf8) {
                return false
            }
            if let end = endKey {
                let e = Array(end.utf8)
                if k.lexicographicallyPrecedes(e) || (!inclusiveEnd && k == e) { return false }
            }
        } else {
            if let start = startKey, k.lexicographicallyPrecedes(Array(start.utf8)) { return false }
            if let end = endKey {
                let e = Array(end.utf8)
                if e.lexicographicallyPrecedes(k) || (!inclusiveEnd && k == e) { return false }
            }
        }
        return true
    }
}

extension KeyRange {
    /// The ids of design documents: `_design/` up to (not including) `_design0`, the next prefix in byte order.
    static let designDocuments = (lower: "_design/", upper: "_design0")

    /// This range intersected with `[lower, upper)` in byte order, as `couch_db:fold_design_docs` narrows
    /// `_all_docs`' range for `_design_docs`; an intersection that is empty stays empty (its start lies past its
    /// end), so the fold reads nothing.
    func narrowed(to bounds: (lower: String, upper: String)) -> KeyRange {
        func precedes(_ a: String, _ b: String) -> Bool { Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) }
        var narrowed = self
        if descending {
            if startKey.map({ precedes(bounds.upper, $0) }) ?? true { narrowed.startKey = bounds.upper }
            if endKey.map({ precedes($0, bounds.lower) }) ?? true {
                narrowed.endKey = bounds.lower
                narrowed.inclusiveEnd = true
            }
        } else {
            if startKey.map({ precedes($0, bounds.lower) }) ?? true { narrowed.startKey = bounds.lower }
            if endKey.map({ !precedes($0, bounds.upper) }) ?? true {
                narrowed.endKey = bounds.upper
                narrowed.inclusiveEnd = false
            }
        }
        return narrowed
    }
}
