import CouchStore
import CouchWire
import QueryServer
import RevTree
import Synchronization

/// The design documents of each database that carry a `validate_doc_update`, read once per change of the
/// database's design documents (`Database.designGeneration`), so a write to a database without validation
/// functions costs one lock and one atomic load, never a read or a worker call.
final class DesignFunctionCache: Sendable {
    /// `@unchecked Sendable`: a `weak` reference is not `Sendable` to the compiler, but an entry is immutable once
    /// made and only ever read or replaced whole under the cache's mutex.
    private struct Entry: @unchecked Sendable {
        weak var database: Database?
        let generation: Int
        let validators: [DesignDocument]
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// The validating design documents of `database`, in id order (the order CouchDB runs them in).
    func validators(_ database: Database) throws -> [DesignDocument] {
        // A database created since the server started, with no design document written: nothing to read or keep.
        guard database.mayHoldDesignDocuments else { return [] }
        let generation = database.designGeneration
        if let entry = entries.withLock({ $0[database.name] }), entry.database === database,
            entry.generation == generation
        {
            return entry.validators
        }
        let validators = try DesignFunctionCache.loadValidators(database)
        entries.withLock {
            $0[database.name] = Entry(database: database, generation: generation, validators: validators)
        }
        return validators
    }

    /// Reads every live design document and keeps those with a `validate_doc_update` member.
    static func loadValidators(_ database: Database) throws -> [DesignDocument] {
        var infos: [DocumentInfo] = []
        // Ids are ordered by bytes, and "0" follows "/": this is every `_design/…` id.
        try database.allDocs(
            startKey: "_design/", endKey: "_design0", inclusiveEnd: false, descending: false, skip: 0, limit: nil
        ) {
            infos.append($0)
            return true
        }
        var validators: [DesignDocument] = []
        for info in infos {
            guard let ddoc = try designDocument(database, info.id), ddoc.body["validate_doc_update"] != nil else {
                continue
            }
            validators.append(ddoc)
        }
        return validators
    }

    /// The winning revision of a live design document as the query server gets it, or nil.
    static func designDocument(_ database: Database, _ id: String) throws -> DesignDocument? {
        guard let revision = try database.revision(id, rev: nil), !revision.deleted, let bytes = revision.body,
            case .object(let fields)? = try? JSON.parse(bytes)
        else { return nil }
        var body = JSONObject()
        body["_id"] = .string(id)
        body["_rev"] = .string(revision.rev.description)
        for (key, value) in fields { body[key] = value }
        return DesignDocument(database: database.name, id: id, rev: revision.rev.description, body: body)
    }
}

extension CouchError {
    /// A query-server failure as CouchDB answers it: 500 with the function's error, `compilation_error` or
    /// `os_process_error`.
    init(_ error: QueryServerError) {
        self = .designFunction(status: 500, error: error.error, reason: error.reason)
    }
}
