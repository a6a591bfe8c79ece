import CouchQuery
import CouchWire

/// The map of Mango json indexes, native (`mango_native_proc`): a document is indexed when every indexed field
/// exists and the partial filter matches it, under the key `[value of field 1, value of field 2, …]` with a
/// `null` value. Reduces never run here (a json index's `_count` is built in).
struct MangoViewEngine: ViewEngine {
    /// One view's map, parsed from its JSON text (`{"fields":{…},"partial_filter_selector":{…}}`).
    struct IndexMap {
        var paths: [[String]]
        var filter: Selector?

        init(_ source: String) {
            let map = (try? JSON.parse(source)) ?? .null
            paths = (map["fields"]?.objectValue?.keys ?? []).map(Selector.splitFieldPath)
            if let partial = map["partial_filter_selector"], partial.objectValue?.isEmpty == false {
                filter = try? Selector(partial)
            }
        }

        /// The key of `document`, or nil when it is not in the index.
        func key(_ document: JSON) -> JSON? {
            if let filter, !filter.matches(document) { return nil }
            var values: [JSON] = []
            values.reserveCapacity(paths.count)
            for path in paths {
                guard case .found(let value) = FieldLookup(path, in: document) else { return nil }
                values.append(value)
            }
            return .array(values)
        }
    }

    func map(_ group: ViewGroup, _ documents: [JSON]) throws -> [[[Emit]]] {
        let maps = group.views.map { IndexMap($0.map) }
        return documents.map { document in
            maps.map { map in map.key(document).map { [Emit(key: $0, value: .null)] } ?? [] }
        }
    }

    func reduce(_ group: ViewGroup, view: Int, keys: [JSON], values: [JSON]) throws -> JSON {
        throw CouchError.badRequest("Mango indexes have no JavaScript reduce")
    }

    func rereduce(_ group: ViewGroup, view: Int, values: [JSON]) throws -> JSON {
        throw CouchError.badRequest("Mango indexes have no JavaScript reduce")
    }
}
