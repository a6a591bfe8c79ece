import CouchCrypto
import CouchStore
import CouchWire

/// One Mango index as `mango_idx` sees it: the special `_all_docs` index, or a `json` index, which is a view of a
/// design document with `"language":"query"` (so it replicates with the database) whose map is
/// `{"fields":{"a":"asc",…},"partial_filter_selector":{…}}`.
struct MangoIndex: Sendable {
    enum Direction: String, Sendable {
        case asc, desc
    }

    /// `_design/…`, nil for `_all_docs`.
    var designID: String?
    var name: String
    /// `special` or `json`.
    var type: String
    var fields: [(name: String, direction: Direction)]
    /// The normalized partial filter; `{}` (none) is nil.
    var partialFilter: JSON?
    /// The definition as the client gave it (`options.def`), for listings.
    var definition: JSON

    var columns: [String] { fields.map(\.name) }
    var isSpecial: Bool { designID == nil }

    static let allDocs = MangoIndex(
        designID: nil, name: "_all_docs", type: "special", fields: [("_id", .asc)], partialFilter: nil,
        definition: ["fields": [["_id": "asc"]]])

    /// The listing form (`GET /db/_index`, `_explain`): `{"ddoc","name","type","partitioned"?,"def"}`.
    var json: JSON {
        var object = JSONObject()
        object["ddoc"] = designID.map(JSON.string) ?? .null
        object["name"] = .string(name)
        object["type"] = .string(type)
        if !isSpecial { object["partitioned"] = false }
        var def = JSONObject()
        def["fields"] = .array(fields.map { .object(JSONObject([($0.name, .string($0.direction.rawValue))])) })
        if let partialFilter { def["partial_filter_selector"] = partialFilter }
        object["def"] = .object(def)
        return .object(object)
    }

    /// The json indexes of one design document body (`mango_idx_view:from_ddoc/2`); none unless its language
    /// is `query`.
    static func indexes(designID: String, document: JSON) -> [MangoIndex] {
        guard document["language"]?.stringValue == "query", case .object(let views)? = document["views"] else {
            return []
        }
        var found: [MangoIndex] = []
        for (name, view) in views {
            guard let map = view["map"], let mapFields = map["fields"]?.objectValue else { continue }
            let fields = mapFields.compactMap { member in
                Direction(rawValue: member.value.stringValue ?? "").map { (member.key, $0) }
            }
            guard fields.count == mapFields.count, !fields.isEmpty else { continue }
            let filter = map["partial_filter_selector"]
            let partial = filter?.objectValue?.isEmpty == false ? filter : nil
            found.append(
                MangoIndex(
                    designID: designID, name: name, type: "json", fields: fields, partialFilter: partial,
                    definition: view["options"]?["def"] ?? .null))
        }
        return found
    }

    /// Every index of `database`: `_all_docs` first, then the json indexes by design document and name.
    static func list(_ database: Database) throws -> [MangoIndex] {
        var indexes = [MangoIndex.allDocs]
        for (id, document) in try designDocuments(database) {
            indexes += MangoIndex.indexes(designID: id, document: document).sorted {
                $0.name.utf8.lexicographicallyPrecedes($1.name.utf8)
            }
        }
        return indexes
    }

    /// The live design documents of `database` with their bodies, in id order.
    static func designDocuments(_ database: Database) throws -> [(id: String, body: JSON)] {
        var ids: [String] = []
        try database.allDocs(
            startKey: "_design/", endKey: "_design0", inclusiveEnd: false, descending: false, skip: 0, limit: nil
        ) { info in
            ids.append(info.id)
            return true
        }
        var documents: [(String, JSON)] = []
        for (id, revision) in zip(ids, try database.winningRevisions(ids)) {
            guard let body = revision?.body, let json = try? JSON.parse(body) else { continue }
            documents.append((id, json))
        }
        return documents
    }

    /// The view a json index is in its design document (`mango_idx_view:make_view/1`).
    var viewJSON: JSON {
        let mapFields = JSONObject(fields.map { ($0.name, JSON.string($0.direction.rawValue)) })
        let map = JSONObject([
            ("fields", .object(mapFields)), ("partial_filter_selector", partialFilter ?? .object(JSONObject())),
        ])
        return .object(
            JSONObject([
                ("map", .object(map)), ("reduce", "_count"),
                ("options", .object(JSONObject([("def", definition)]))),
            ]))
    }
}
