import CouchServer
import CouchStore
import CouchWire

/// What `couchlite receive` has exported from a drop database, kept in the database itself as `_local`
/// documents (out of reach of the one-time credentials, see `App+ScopedAccess`):
///
/// - `_local/couchlite-receive` holds `seq`, the `_changes` position up to which every document is exported;
/// - `_local/couchlite-receive-md5-<hex>` holds the `name` under which the bytes with that md5 were saved, one
///   small document per file, so the same bytes are never written twice, even across restarts, and so an
///   export cut by a crash after its name was recorded can be finished (`PhotoFolder.recover`). One document
///   per file keeps each record O(1) however many photos a drop holds.
struct ExportState {
    static let positionID = RequestAuthorizer.reservedLocalPrefix + "receive"
    static let filePrefix = RequestAuthorizer.reservedLocalPrefix + "receive-md5-"

    package let database: Database

    /// The saved position, 0 when there is none.
    func position() throws -> Int {
        guard let local = try database.localDocument(ExportState.positionID),
            case .object(let object) = (try? JSON.parse(local.body)) ?? .null
        else { return 0 }
        return object["seq"]?.intValue ?? 0
    }

    func savePosition(_ seq: Int) throws {
        let body = JSON.object(JSONObject([("seq", .number(JSONNumber(seq)))])).serialized()
        try put(ExportState.positionID, body)
    }

    /// The name the bytes with this md5 (hex) were saved under, nil when they never were.
    func fileName(md5: String) throws -> String? {
        guard let local = try database.localDocument(ExportState.filePrefix + md5),
            case .object(let object) = (try? JSON.parse(local.body)) ?? .null
        else { return nil }
        return object["name"]?.stringValue
    }

    func recordFile(md5: String, name: String) throws {
        try put(ExportState.filePrefix + md5, JSON.object(JSONObject([("name", .string(name))])).serialized())
    }

    private func put(_ id: String, _ body: [UInt8]) throws {
        let rev = try database.localDocument(id)?.rev
        _ = try database.putLocal(id, body: body, rev: rev)
    }
}
