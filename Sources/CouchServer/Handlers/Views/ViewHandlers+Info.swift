import CouchStore
import CouchWire

extension ViewHandlers {
    /// `GET /db/_design/d/_info`: the design document's index in CouchDB's shape (`couch_mrview:get_info`).
    package func info(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        let design = try c.parameter("design")
        let group = try ViewGroup.load(database, design: design)
        let index = try views.index(database, group)
        let sizes = try index.file.sizes()
        let pending = try database.changeCount(since: index.file.updateSeq)
        let viewIndex = JSONObject([
            ("updates_pending", ["minimum": .int(pending), "preferred": .int(pending), "total": .int(pending)]),
            ("waiting_commit", false),
            ("waiting_clients", .int(index.waitingClients)),
            ("updater_running", .bool(index.updaterRunning)),
            ("update_seq", .int(index.file.updateSeq)),
            ("sizes", ["file": .int(sizes.file), "external": .int(sizes.external), "active": .int(sizes.file)]),
            ("signature", .string(group.signature)),
            ("purge_seq", .int(index.file.purgeSeq)),
            ("language", .string(group.language)),
            ("compact_running", false),
        ])
        return .json(.ok, .object(JSONObject([("name", .string(design)), ("view_index", .object(viewIndex))])))
    }

    /// `POST /db/_view_cleanup`: deletes the index files of signatures no design document of the database has any
    /// more.
    func cleanup(_ c: RequestContext) throws -> Response {
        let database = try c.database()
        try c.request.requireJSONContent()
        var designIDs: [String] = []
        try database.allDocs(
            startKey: "_design/", endKey: "_design0", inclusiveEnd: false, descending: false, skip: 0, limit: nil
        ) { doc in
            designIDs.append(doc.id)
            return true
        }
        var keep = Set<String>()
        for id in designIDs {
            guard let group = try? ViewGroup.load(database, design: String(id.dropFirst("_design/".count))) else {
                continue
            }
            keep.insert(group.signature)
        }
        views.cleanup(database, keep: keep)
        return .json(.accepted, ["ok": true])
    }
}
