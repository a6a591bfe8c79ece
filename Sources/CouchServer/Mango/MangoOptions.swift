import CouchQuery
import CouchWire

extension JSONObject {
    /// The member `key` of a Mango request body, after checking that every member is one of `allowed`
    /// (`mango_opts:validate/2`): 400 `invalid_key` for another, `missing_required_key` without `key`.
    func mangoRequired(_ key: String, allowed: Set<String>) throws(CouchError) -> JSON {
        for name in keys where !allowed.contains(name) {
            throw .mango("invalid_key", "Invalid key \(name) for this request.")
        }
        guard let value = self[key] else { throw .mango("missing_required_key", "Missing required key: \(key)") }
        return value
    }
}

extension CouchError {
    /// One of Mango's named errors (`mango_error:info/2`): its own `error` name with CouchDB's status and reason.
    static func mango(_ error: String, _ reason: String, status: Int = 400) -> CouchError {
        .designFunction(status: status, error: error, reason: reason)
    }
}

/// A `sort`: fields in order, one direction for all (`mango_sort`).
struct MangoSort: Sendable {
    var fields: [String] = []
    var descending = false

    /// Parses `[ "a", {"b":"desc"} ]`; the errors are CouchDB's.
    init(_ json: JSON?) throws(CouchError) {
        guard let json else { return }
        guard case .array(let specs) = json else {
            throw .mango(
                "invalid_sort_json",
                "Sort must be an array of sort specs, not: \(ErlangText.format(json, pretty: true))")
        }
        var directions: Set<String> = []
        for spec in specs {
            switch spec {
            case .string(let field):
                fields.append(field)
                directions.insert("asc")
            case .object(let object) where object.count == 1:
                guard let direction = object[0].value.stringValue, direction == "asc" || direction == "desc" else {
                    throw .mango("invalid_sort_dir", "Invalid sort direction: \(ErlangText.format(object[0].value))")
                }
                fields.append(object[0].key)
                directions.insert(direction)
            default:
                throw .mango("invalid_sort_field", "Invalid sort field: \(ErlangText.format(spec, pretty: true))")
            }
        }
        guard directions.count <= 1 else {
            throw .mango(
                "unsupported_mixed_sort", "Sorts currently only support a single direction for all fields.")
        }
        descending = directions.first == "desc"
    }

    /// `{"a":"asc",…}`, as `_explain` shows it.
    var json: JSON {
        .object(JSONObject(fields.map { ($0, JSON.string(descending ? "desc" : "asc")) }))
    }
}

/// The body of `POST /db/_find` and `/db/_explain`, validated as `mango_opts:validate_find/1` does.
struct FindOptions: Sendable {
    static let defaultLimit = 25
    static let keys: Set<String> = [
        "selector", "use_index", "bookmark", "limit", "skip", "sort", "fields", "partition", "r", "conflicts",
        "stale", "update", "stable", "execution_stats", "allow_fallback",
    ]

    var selector: Selector
    /// `[ddoc]` or `[ddoc, name]`, the ddoc without `_design/`… as sent.
    var useIndex: [String] = []
    var bookmark: String?
    var limit = FindOptions.defaultLimit
    var skip = 0
    var sort: MangoSort
    var fields: [String] = []
    var r = 1
    var conflicts = false
    var stale = false
    var update = true
    var stable = false
    var executionStats = false
    var allowFallback = true

    init(_ body: JSONObject, regexMemory: RegexMemory = .server) throws(CouchError) {
        let selectorJSON = try body.mangoRequired("selector", allowed: FindOptions.keys)
        guard case .object = selectorJSON else {
            throw .mango(
                "invalid_selector_json", "Selector must be a JSON object, not: \(ErlangText.format(selectorJSON))")
        }
        do {
            selector = try Selector(selectorJSON, regexMemory: regexMemory)
        } catch {
            throw .mango(error.error, error.reason, status: error.status)
        }
        if let value = body["use_index"] { useIndex = try FindOptions.useIndex(value) }
        if let value = body["bookmark"] {
            guard case .string(let text) = value else {
                throw .mango("invalid_bookmark", "Invalid bookmark value: \(value.serializedString)")
            }
            bookmark = text == "nil" || text.isEmpty ? nil : text
        }
        if let value = body["limit"] { limit = try FindOptions.nonNegative(value) }
        if let value = body["skip"] { skip = try FindOptions.nonNegative(value) }
        sort = try MangoSort(body["sort"])
        if let value = body["fields"] {
            guard case .array(let items) = value else {
                throw .mango("invalid_value", "Invalid value for fields: \(ErlangText.format(value))")
            }
            for item in items {
                guard case .string(let field) = item else {
                    throw .mango("invalid_value", "Invalid value for fields: \(ErlangText.format(value))")
                }
                fields.append(field)
            }
        }
        if let value = body["r"] {
            guard let count = value.intValue, count > 0 else {
                throw .mango("invalid_pos_integer", "\(ErlangText.format(value)) is not an integer greater than zero")
            }
            r = count
        }
        if let value = body["partition"], value != "" {
            throw .badRequest("`partition` parameter is not supported in this db.")
        }
        conflicts = try FindOptions.boolean(body["conflicts"], default: false)
        update = try FindOptions.boolean(body["update"], default: true)
        stable = try FindOptions.boolean(body["stable"], default: false)
        executionStats = try FindOptions.boolean(body["execution_stats"], default: false)
        allowFallback = try FindOptions.boolean(body["allow_fallback"], default: true)
        if let value = body["stale"] {
            switch value {
            case "ok": stale = true
            case false: stale = false
            default: throw .mango("invalid_value", "Invalid value for stale: \(ErlangText.format(value))")
            }
        }
    }

    private static func useIndex(_ value: JSON) throws(CouchError) -> [String] {
        switch value {
        case .string(let name): return name.isEmpty ? [] : [name]
        case .array(let items) where items.count <= 2 && items.allSatisfy({ $0.stringValue != nil }):
            return items.compactMap(\.stringValue)
        default:
            throw .mango("invalid_index_name", "Invalid index name: \(ErlangText.format(value))")
        }
    }

    private static func nonNegative(_ value: JSON) throws(CouchError) -> Int {
        // A huge integer is as good as unbounded; a fraction or a negative number is refused.
        if case .number(let number) = value, number.intValue == nil, number.text.utf8.allSatisfy({ $0 &- 48 < 10 }) {
            return Int.max
        }
        guard case .number(let number) = value, let integer = number.intValue, integer >= 0 else {
            throw .mango(
                "invalid_non_neg_integer",
                "\(ErlangText.format(value)) is not an integer greater than or equal to zero")
        }
        return integer
    }

    private static func boolean(_ value: JSON?, default fallback: Bool) throws(CouchError) -> Bool {
        guard let value else { return fallback }
        guard case .bool(let flag) = value else {
            throw .mango("invalid_boolean", "Invalid boolean value: \(ErlangText.format(value))")
        }
        return flag
    }

    /// The options as `_explain` shows them (`opts`).
    var explainJSON: JSON {
        .object(
            JSONObject([
                ("use_index", .array(useIndex.map(JSON.string))), ("bookmark", .string(bookmark ?? "nil")),
                ("limit", .int(limit)), ("skip", .int(skip)), ("sort", sort.json),
                ("fields", .array(fields.map(JSON.string))), ("partition", ""), ("r", .int(r)),
                ("conflicts", .bool(conflicts)), ("stale", .bool(stale)), ("update", .bool(update)),
                ("stable", .bool(stable)), ("execution_stats", .bool(executionStats)),
                ("allow_fallback", .bool(allowFallback)),
            ]))
    }
}
