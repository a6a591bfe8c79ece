import CouchCrypto
import CouchQuery
import CouchStore
import CouchWire

/// One view of a design document: its map source and optional reduce (a built-in or JavaScript).
struct ViewDefinition: Sendable {
    package var name: String
    var map: String
    var reduce: String?

    /// The native reducer when `reduce` names a built-in.
    var builtin: BuiltinReducer? { reduce.flatMap(BuiltinReducer.init(source:)) }
}

/// The views of one design document revision as an index sees them (`couch_mrview_util:ddoc_to_mrst`): the
/// views in name order (their position is the index's view number), the language, the design options and
/// `views.lib` (CommonJS modules for `require`). The signature is an md5 of exactly these, so two design
/// documents with the same views share one index and any change to them builds a new one; other members
/// (filters, validate_doc_update, `_rev`) do not change it.
struct ViewGroup: Sendable {
    var designID: String
    var language: String
    var views: [ViewDefinition]
    /// `options.include_design`: design documents are mapped too.
    var includeDesign: Bool
    /// `options.local_seq`: map functions see `_local_seq`.
    var localSeq: Bool
    /// The whole design document, for the engine (`require` reads modules from it).
    var document: JSON
    var signature: String
    /// The database the design document belongs to (its functions run in an environment of their own).
    var database = ""

    /// Reads the views of a design document body; nil members are treated as CouchDB treats them (no views).
    init(designID: String, document: JSON) throws(CouchError) {
        self.designID = designID
        self.document = document
        language = document["language"]?.stringValue ?? "javascript"
        let options = document["options"]
        includeDesign = options?["include_design"]?.boolValue ?? false
        localSeq = options?["local_seq"]?.boolValue ?? false
        var views: [ViewDefinition] = []
        var lib: JSON = .null
        if case .object(let members)? = document["views"] {
            for (name, definition) in members {
                if name == "lib" {
                    lib = definition
                    continue
                }
                // A Mango (`"language":"query"`) view's map is an object, kept as its JSON text.
                guard
                    let map = definition["map"]?.stringValue
                        ?? definition["map"]?.objectValue.map({ JSON.object($0).serializedString })
                else { continue }
                views.append(ViewDefinition(name: name, map: map, reduce: definition["reduce"]?.stringValue))
            }
        }
        views.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        self.views = views
        var basis: [JSON] = [.string(language), options ?? .null, lib]
        for view in views {
            basis.append(.array([.string(view.name), .string(view.map), view.reduce.map(JSON.string) ?? .null]))
        }
        signature = Digest(.md5).hexDigest(of: JSON.array(basis).serialized())
    }

    /// The view named `name`, with its number in the index.
    func view(named name: String) -> (number: Int, definition: ViewDefinition)? {
        guard let number = views.firstIndex(where: { $0.name.utf8Equals(name) }) else { return nil }
        return (number, views[number])
    }
}

extension Digest {
    fileprivate func hexDigest(of bytes: [UInt8]) -> String {
        update(bytes)
        return finalize().map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

extension ViewGroup {
    /// The views of `_design/<design>`; 404 `missing` (as CouchDB) when it does not exist or is deleted.
    static func load(_ database: Database, design: String) throws -> ViewGroup {
        let id = "_design/" + design
        guard let info = try database.document(id), !info.deleted, let revision = try database.revision(id, rev: nil),
            let body = revision.body, let document = try? JSON.parse(body)
        else { throw CouchError.notFound("missing") }
        var group = try ViewGroup(designID: id, document: document)
        group.database = database.name
        return group
    }
}
