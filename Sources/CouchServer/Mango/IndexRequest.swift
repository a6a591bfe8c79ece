import CouchCrypto
import CouchWire

/// The body of `POST /db/_index`, validated as `mango_opts:validate_idx_create/1` and `mango_idx:new/2` do:
/// the index definition, its name and design document (both defaulting to a hash of the definition).
struct IndexRequest {
    static let keys: Set<String> = ["index", "type", "name", "ddoc", "w", "partitioned"]

    var index: MangoIndex
    var name: String
    var designID: String

    init(_ body: JSONObject) throws(CouchError) {
        let definition = try body.mangoRequired("index", allowed: IndexRequest.keys)
        guard case .object = definition else {
            throw .mango("invalid_object", "\(ErlangTerm.format(definition)) is not a JSON object")
        }
        switch body["type"] ?? "json" {
        case "json": break
        case "text", "nouveau":
            throw .mango("required index service unavailable", body["type"]?.stringValue ?? "", status: 503)
        case let other:
            throw .mango("invalid_index", "Invalid type for index: \(other.stringValue ?? ErlangTerm.format(other))")
        }
        guard let fieldsJSON = definition["fields"] else {
            throw .mango("missing_required_key", "Missing required key: fields")
        }
        let sort = try MangoSort(fieldsJSON)
        var partial: JSON?
        if let filter = definition["partial_filter_selector"], filter.objectValue?.isEmpty == false {
            do {
                partial = try Selector(filter).normalized
            } catch {
                throw .mango(error.error, error.reason)
            }
        }
        let direction: MangoIndex.Direction = sort.descending ? .desc : .asc
        let fields = sort.fields.map { (name: $0, direction: direction) }
        let ddoc = try IndexRequest.string(body["ddoc"])
        let hashed = IndexRequest.hash([definition, ddoc.map(JSON.string) ?? .null])
        name = try IndexRequest.string(body["name"]) ?? hashed
        if let ddoc {
            designID = ddoc.hasPrefix("_design/") ? ddoc : "_design/" + ddoc
        } else {
            designID = "_design/" + IndexRequest.hash([definition, .null])
        }
        index = MangoIndex(
            designID: designID, name: name, type: "json", fields: fields, partialFilter: partial,
            definition: definition)
    }

    private static func string(_ value: JSON?) throws(CouchError) -> String? {
        guard let value else { return nil }
        guard case .string(let text) = value else {
            throw .mango("invalid_string", "Invalid string: \(ErlangTerm.format(value))")
        }
        guard !text.isEmpty else {
            throw .mango("invalid_empty_string", "Index name or ddoc cannot be empty string")
        }
        return text
    }

    /// The default name: a SHA-1 of the definition (CouchDB hashes its Erlang term; the text differs, the shape
    /// — 40 hex digits, the same for the same definition — does not).
    private static func hash(_ parts: [JSON]) -> String {
        Digest.hash(.sha1, JSON.array(parts).serialized()).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
