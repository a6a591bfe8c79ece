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

extension DatabaseInfo {
    /// `GET /db` for the drop credentials: the shape replicators read (`db_name`, `instance_start_time`,
    /// `update_seq`), with counts of what the credentials themselves created and nothing that depends on anyone
    /// else's documents. `doc_count`, `update_seq` and `sizes` of the database would move when a probe created an
    /// absent id and stay put when it was shadowed (`DropLedger`), telling a sender which ids exist (issue 35).
    package static func json(forDrop drop: DropLedger, name: String) -> JSON {
        let created = drop.createdCount
        return [
            "instance_start_time": "0",
            "db_name": .string(name),
            "purge_seq": Seq.json(0),
            "update_seq": Seq.json(created),
            "sizes": ["file": 0, "external": 0, "active": 0],
            "props": [:],
            "doc_del_count": 0,
            "doc_count": .number(JSONNumber(created)),
            "disk_format_version": 8,
            "compact_running": false,
            "cluster": ["q": 1, "n": 1, "w": 1, "r": 1],
        ]
    }
}

/// Update sequences on the wire, in CouchDB 3's `N-<opaque>` shape (`UpdateSeq`).
enum Seq {
    package static func json(_ seq: Int) -> JSON { .string(UpdateSeq.format(seq)) }
}
