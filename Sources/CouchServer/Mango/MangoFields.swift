import CouchQuery
import CouchWire

/// `fields`: the members of a result document the client asked for (`mango_fields:extract/2`); a dotted field
/// keeps its nesting (`"a.b"` gives `{"a":{"b":…}}`), a missing one is left out.
enum MangoFields {
    static func extract(_ document: JSON, _ fields: [String]) -> JSON {
        guard !fields.isEmpty else { return document }
        var result = JSONObject()
        for field in fields {
            let path = Selector.splitFieldPath(field)
            guard case .found(let value) = FieldLookup(path, in: document) else { continue }
            set(&result, path[...], value)
        }
        return .object(result)
    }

    private static func set(_ object: inout JSONObject, _ path: ArraySlice<String>, _ value: JSON) {
        guard let first = path.first else { return }
        if path.count == 1 {
            object[first] = value
            return
        }
        var child = object[first]?.objectValue ?? JSONObject()
        set(&child, path.dropFirst(), value)
        object[first] = .object(child)
    }
}

extension MangoFields {
    /// `document` with `value` set at `path`, creating the objects along it.
    static func merge(_ document: JSON, path: [String], _ value: JSON) -> JSON {
        guard case .object(var object) = document else { return document }
        set(&object, path[...], value)
        return .object(object)
    }
}
