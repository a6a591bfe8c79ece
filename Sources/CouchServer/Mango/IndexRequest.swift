import CouchCrypto
import CouchQuery
import CouchWire
import RevTree

/// The body of `POST /db/_index`, validated as `mango_opts:validate_idx_create/1` and `mango_idx:new/2` do:
/// the index definition, its name and design document (both defaulting to CouchDB's hash of the definition and the
/// options, `generatedName`).
struct IndexRequest {
    static let keys: Set<String> = ["index", "type", "name", "ddoc", "w", "partitioned"]

    var index: MangoIndex
    var name: String
    var designID: String

    init(_ body: JSONObject) throws(CouchError) {
        let definition = try body.mangoRequired("index", allowed: IndexRequest.keys)
        guard case .object = definition else {
            throw .mango("invalid_object", "\(ErlangText.format(definition)) is not a JSON object")
        }
        switch body["type"] ?? "json" {
        case "json": break
        case "text", "nouveau":
            throw .mango("required index service unavailable", body["type"]?.stringValue ?? "", status: 503)
        case let other:
            throw .mango("invalid_index", "Invalid type for index: \(other.stringValue ?? ErlangText.format(other))")
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
        let givenName = try IndexRequest.string(body["name"])
        let generated = IndexRequest.generatedName(
            definition: definition,
            options: [
                ("ddoc", ddoc.map { .binary(Array($0.utf8)) } ?? .atom("auto_name")),
                ("name", givenName.map { .binary(Array($0.utf8)) } ?? .atom("auto_name")),
                ("partitioned", try IndexRequest.partitioned(body["partitioned"])),
                ("type", .binary(Array((body["type"]?.stringValue ?? "json").utf8))),
                ("w", .int(try IndexRequest.positiveInteger(body["w"]) ?? 2)),
            ])
        name = givenName ?? generated
        if let ddoc {
            designID = ddoc.hasPrefix("_design/") ? ddoc : "_design/" + ddoc
        } else {
            designID = "_design/" + generated
        }
        index = MangoIndex(
            designID: designID, name: name, type: "json", fields: fields, partialFilter: partial,
            definition: definition)
    }

    private static func string(_ value: JSON?) throws(CouchError) -> String? {
        guard let value else { return nil }
        guard case .string(let text) = value else {
            throw .mango("invalid_string", "Invalid string: \(ErlangText.format(value))")
        }
        guard !text.isEmpty else {
            throw .mango("invalid_empty_string", "Index name or ddoc cannot be empty string")
        }
        return text
    }

    /// `w` (a write quorum couchlite, with one copy, has no use for; it still names the index): a positive integer.
    private static func positiveInteger(_ value: JSON?) throws(CouchError) -> Int? {
        guard let value else { return nil }
        guard let number = value.intValue, number > 0 else {
            throw .mango("invalid_pos_integer", "\(ErlangText.format(value)) is not an integer greater than zero")
        }
        return number
    }

    /// `partitioned`: `true`, `false` or absent (`db_default`); anything else fails in `mango_opts` with an
    /// error CouchDB 3.4.3 does not map, so it answers a 500 `unknown_error` naming it.
    private static func partitioned(_ value: JSON?) throws(CouchError) -> ErlangTerm {
        switch value {
        case nil: return .atom("db_default")
        case .bool(let flag)?: return .bool(flag)
        case let other?:
            throw .mango(
                "unknown_error",
                "Unknown Error: mango_opts :: {invalid_partitioned_value,\(ErlangText.format(other))}", status: 500)
        }
    }

    /// The default name (and design document) as `mango_idx:gen_name/2` makes it: the hex SHA-1 of
    /// `term_to_binary({Def, lists:usort(Opts)}, [{minor_version, 1}])`, where `Def` is the `index` object as jiffy
    /// decodes it and `Opts` the validated options (`{def, Def}`, `{ddoc, …}`, `{name, …}`, `{partitioned, …}`,
    /// `{type, …}`, `{w, …}`, `auto_name` for a name or ddoc not given). The same request therefore names its
    /// index as CouchDB does, so an application that looks an index up by its generated name finds it here too.
    /// - Parameter options: every option but `def`, in any order (sorted here as `lists:usort` sorts atoms).
    static func generatedName(definition: JSON, options: [(key: String, value: ErlangTerm)]) -> String {
        var definitionTerm: [UInt8] = []
        let bytes = definition.serialized()
        if !JiffyTerm.encode(bytes, into: &definitionTerm) { ErlangTerm.binary(bytes).encode(into: &definitionTerm) }
        // `def` takes its place among the sorted keys; its term is written from `definitionTerm` below.
        let sorted = (options + [("def", .atom("def"))]).sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        var out: [UInt8] = [131, 104, 2]  // {Def, Opts}
        out += definitionTerm
        out.append(108)  // LIST_EXT, u32 length, the elements, NIL_EXT
        out += withUnsafeBytes(of: UInt32(sorted.count).bigEndian, Array.init)
        for (key, value) in sorted {
            out += [104, 2]
            ErlangTerm.atom(key).encode(into: &out)
            if key == "def" { out += definitionTerm } else { value.encode(into: &out) }
        }
        out.append(106)
        return Digest.hash(.sha1, out).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
