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
