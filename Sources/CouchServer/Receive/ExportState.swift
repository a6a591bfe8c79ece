import CouchWire

/// What `couchlite receive` has exported from a drop database, kept in the database itself as the `_local`
/// document `_local/couchlite-receive` (out of reach of the one-time credentials, see `App+ScopedAccess`).
///
/// `seq` is the `_changes` position every document up to which is exported; `files` maps the md5 (hex) of
/// each exported file's bytes to its name in the folder, so the same bytes are never written twice, even
/// across restarts, and so an export cut by a crash after its name was recorded can be finished.
struct ExportState: Equatable {
    static let documentID = App.reservedLocalPrefix + "receive"

    var seq = 0
    var files: [String: String] = [:]

    init() {}

    init(json: JSON) {
        guard case .object(let object) = json else { return }
        seq = object["seq"]?.intValue ?? 0
        for (digest, name) in object["files"]?.objectValue ?? JSONObject() {
            if let name = name.stringValue { files[digest] = name }
        }
    }

    var json: JSON {
        let files = JSONObject(self.files.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })
        return .object(JSONObject([("seq", .number(JSONNumber(seq))), ("files", .object(files))]))
    }
}
