import CouchWire
import RevTree

/// `GET /db/_design/d/_info` and `POST /db/_view_cleanup`.
extension App {
    /// The design document's index in CouchDB's shape (`couch_mrview:get_info`).
    func designInfo(_ database: Database, design: String, _ request: Request, _ reply: Reply) throws {
        try require(request, "GET")
        let group = try designGroup(database, design: design)
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
        try reply.json(200, .object(JSONObject([("name", .string(design)), ("view_index", .object(viewIndex))])))
    }

    /// Deletes the index files of signatures no design document of the database has any more.
    func viewCleanup(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "POST")
        try requireJSONContent(request)
        var designIDs: [String] = []
        try database.allDocs(
            startKey: "_design/", endKey: "_design0", inclusiveEnd: false, descending: false, skip: 0, limit: nil
        ) { doc in
            designIDs.append(doc.id)
            return true
        }
        var keep = Set<String>()
        for id in designIDs {
            guard let group = try? designGroup(database, design: String(id.dropFirst("_design/".count))) else {
                continue
            }
            keep.insert(group.signature)
        }
        views.cleanup(database, keep: keep)
        try reply.json(202, ["ok": true])
    }
}
