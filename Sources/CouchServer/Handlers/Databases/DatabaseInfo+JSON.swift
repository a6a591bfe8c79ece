import CouchStore
import CouchWire

extension DatabaseInfo {
    /// `GET /db`'s body, also the `info` of the request object design functions get.
    /// - Parameter compactions: Whether `_compact` is still running on the database (`compact_running`).
    package static func json(of database: Database, compactions: Compactions) throws -> JSON {
        let info = try database.info()
        return [
            "instance_start_time": "0",
            "db_name": .string(info.name),
            "purge_seq": Seq.json(info.purgeSeq),
            "update_seq": Seq.json(info.updateSeq),
            "sizes": [
                "file": .number(JSONNumber(info.fileSize)),
                "external": .number(JSONNumber(info.externalSize)),
                "active": .number(JSONNumber(info.activeSize)),
            ],
            "props": [:],
            "doc_del_count": .number(JSONNumber(info.docDelCount)),
            "doc_count": .number(JSONNumber(info.docCount)),
            "disk_format_version": 8,
            "compact_running": .bool(compactions.isRunning(info.name)),
            "cluster": ["q": 1, "n": 1, "w": 1, "r": 1],
        ]
    }
}

/// Update sequences on the wire, in CouchDB 3's `N-<opaque>` shape (`UpdateSeq`).
enum Seq {
    package static func json(_ seq: Int) -> JSON { .string(UpdateSeq.format(seq)) }
}
