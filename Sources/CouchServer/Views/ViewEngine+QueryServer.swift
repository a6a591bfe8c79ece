import CouchWire
import QueryServer

/// Views on the JavaScript query server (Duktape worker processes): all map functions of a design document run
/// in one pass over a batch of documents; JavaScript reduces run by source.
struct QueryServerViewEngine: ViewEngine {
    package let server: QueryServer

    func map(_ group: ViewGroup, _ documents: [JSON]) throws -> [[[Emit]]] {
        let outcomes: [[MapOutcome]]
        do {
            outcomes = try server.map(designDocument(group), views: group.views.map(\.name), docs: documents)
        } catch {
            throw CouchError(error)
        }
        return outcomes.map { perView in
            perView.map { outcome in
                switch outcome {
                case .emitted(let rows): rows.map { Emit(key: $0.key, value: $0.value) }
                case .failed: []  // CouchDB logs the error and indexes nothing for the document
                }
            }
        }
    }

    func reduce(_ group: ViewGroup, view: Int, keys: [JSON], values: [JSON]) throws -> JSON {
        guard let source = group.views[view].reduce else { return .null }
        do {
            return try server.reduce(designDocument(group), sources: [source], keys: keys, values: values).first
                ?? .null
        } catch {
            throw CouchError(error)
        }
    }

    func rereduce(_ group: ViewGroup, view: Int, values: [JSON]) throws -> JSON {
        guard let source = group.views[view].reduce else { return .null }
        do {
            return try server.rereduce(designDocument(group), sources: [source], values: values).first ?? .null
        } catch {
            throw CouchError(error)
        }
    }

    /// The design document whose environment runs the group's functions: one per database, design document and
    /// views signature, so no two databases (nor two design documents) share a JavaScript global.
    private func designDocument(_ group: ViewGroup) -> DesignDocument {
        DesignDocument(
            database: group.database, id: group.designID, rev: "views-" + group.signature,
            body: group.document.objectValue ?? JSONObject())
    }
}
