import RevTree

/// The SQLite schema of one database file and its `PRAGMA user_version` upgrade ladder.
///
/// One row per document, as CouchDB (`#full_doc_info{}` in the by-id tree) and LiteCore do: `documents` holds each
/// document's whole revision tree, serialized (`RowCodec`), and is keyed by the document's latest update seq, so
/// `_changes` is a scan of the table in key order and a write moves the row to its new seq. Every stored body is
/// keyed by the seq of the update that wrote it (the revision's `_local_seq`): the body the row's own update wrote
/// sits in the row itself (LiteCore keeps the current revision's body the same way), every other one — a
/// conflict, or an ancestor not yet compacted — in `bodies`, where an update moves its predecessor's body. A new
/// document therefore costs one appended `documents` row and one `doc_id` index entry, whatever the length of its
/// `_revisions`, and reading its current body takes no second lookup.
enum Schema {
    /// The version this code writes.
    static let latest = 5

    /// A new file's tables, at `latest`.
    static let current = """
        CREATE TABLE db_meta (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          uuid TEXT NOT NULL,
          update_seq INTEGER NOT NULL DEFAULT 0,
          purge_seq INTEGER NOT NULL DEFAULT 0,
          revs_limit INTEGER NOT NULL DEFAULT 1000,
          doc_count INTEGER NOT NULL DEFAULT 0,
          doc_del_count INTEGER NOT NULL DEFAULT 0,
          external_size INTEGER NOT NULL DEFAULT 0,
          purged_infos_limit INTEGER NOT NULL DEFAULT 1000
        ) STRICT;
        CREATE TABLE local_docs (
          doc_id TEXT PRIMARY KEY,
          rev INTEGER NOT NULL,
          body BLOB NOT NULL
        ) STRICT, WITHOUT ROWID;
        \(documentTables)
        \(purgeLog)
        """

    /// Version 5: the purge log (`_purge`), one row per purge request entry, the newest `purged_infos_limit`
    /// kept; index updaters read the ids purged since the purge seq they last saw.
    private static let purgeLog = """
        CREATE TABLE purge_log (
          purge_seq INTEGER PRIMARY KEY,
          doc_id TEXT NOT NULL,
          revs TEXT NOT NULL
        ) STRICT;
        """

    /// The tables version 3 introduced. `deleted` is the winner's flag, kept beside the tree so `_all_docs` and
    /// `doc_count` queries need not decode it.
    private static let documentTables = """
        CREATE TABLE documents (
          seq INTEGER PRIMARY KEY,
          doc_id TEXT NOT NULL UNIQUE,
          deleted INTEGER NOT NULL,
          tree BLOB NOT NULL,
          body BLOB,
          attachments BLOB
        ) STRICT;
        CREATE TABLE bodies (
          seq INTEGER PRIMARY KEY,
          body BLOB NOT NULL,
          attachments BLOB
        ) STRICT;
        """

    /// Version 1 as first shipped: a row per revision. Kept to document the ladder and to build old files in tests.
    static let version1 = """
        CREATE TABLE db_meta (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          uuid TEXT NOT NULL,
          update_seq INTEGER NOT NULL DEFAULT 0,
          purge_seq INTEGER NOT NULL DEFAULT 0,
          revs_limit INTEGER NOT NULL DEFAULT 1000,
          doc_count INTEGER NOT NULL DEFAULT 0,
          doc_del_count INTEGER NOT NULL DEFAULT 0
        ) STRICT;
        CREATE TABLE docs (
          doc_rowid INTEGER PRIMARY KEY,
          doc_id TEXT NOT NULL UNIQUE,
          seq INTEGER NOT NULL UNIQUE,
          winner_pos INTEGER NOT NULL,
          winner_hash TEXT NOT NULL,
          deleted INTEGER NOT NULL DEFAULT 0
        ) STRICT;
        CREATE TABLE revs (
          rev_rowid INTEGER PRIMARY KEY,
          doc_rowid INTEGER NOT NULL,
          pos INTEGER NOT NULL CHECK (pos >= 1),
          hash TEXT NOT NULL,
          parent INTEGER,
          is_leaf INTEGER NOT NULL DEFAULT 1,
          deleted INTEGER NOT NULL DEFAULT 0,
          body BLOB,
          local_seq INTEGER NOT NULL DEFAULT 0,
          UNIQUE (doc_rowid, pos, hash)
        ) STRICT;
        CREATE INDEX revs_leaves ON revs(doc_rowid) WHERE is_leaf = 1;
        CREATE TABLE rev_attachments (
          rev_rowid INTEGER NOT NULL,
          name TEXT NOT NULL,
          content_type TEXT NOT NULL,
          digest TEXT NOT NULL,
          length INTEGER NOT NULL,
          revpos INTEGER NOT NULL,
          encoding TEXT,
          encoded_length INTEGER,
          blob_key TEXT NOT NULL,
          PRIMARY KEY (rev_rowid, name)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX rev_attachments_blob ON rev_attachments(blob_key);
        CREATE TABLE local_docs (
          doc_id TEXT PRIMARY KEY,
          rev INTEGER NOT NULL,
          body BLOB NOT NULL
        ) STRICT, WITHOUT ROWID;
        """

    /// Brings a file from `version` to `version + 1`, inside the caller's transaction.
    private static func upgrade(from version: Int, _ connection: SQLiteConnection) throws {
        switch version {
        case 1:
            // Version 2: a covering leaf index (superseded by version 3, which drops the table).
            try connection.execute(
                """
                DROP INDEX revs_leaves;
                CREATE INDEX revs_leaves ON revs(doc_rowid, pos, hash, deleted, is_leaf) WHERE is_leaf = 1;
                """)
        case 2:
            try upgradeToOneRowPerDocument(connection)
        case 3:
            try recountExternalSizes(connection)
        case 4:
            try connection.execute(
                "ALTER TABLE db_meta ADD COLUMN purged_infos_limit INTEGER NOT NULL DEFAULT 1000;" + purgeLog)
        default:
            throw StoreError.internalError("no upgrade from schema version \(version)")
        }
    }

    /// Brings `connection` to `latest`: a new file gets `current` at once, an older one climbs the ladder one
    /// transaction per step (a crash leaves it at the last finished step).
    /// - Throws: `StoreError.internalError` for a file written by a newer version.
    static func migrate(_ connection: SQLiteConnection, uuid: String) throws {
        var version = try connection.scalarInt("PRAGMA user_version") ?? 0
        guard version <= latest else {
            throw StoreError.internalError("database file has schema version \(version), newer than \(latest)")
        }
        if version == 0 {
            try connection.inTransaction(.immediate) {
                try connection.execute(current)
                try connection.run("INSERT INTO db_meta (id, uuid) VALUES (1, ?)", [.text(uuid)])
                try connection.setPragma("user_version", "\(latest)")
            }
            return
        }
        while version < latest {
            try connection.inTransaction(.immediate) {
                try upgrade(from: version, connection)
                try connection.setPragma("user_version", "\(version + 1)")
            }
            version += 1
        }
    }

    /// Version 3: rows per revision (`docs`, `revs`, `rev_attachments`) become one `documents` row per document,
    /// holding the body its latest update wrote, and a `bodies` row per other stored body. Version 2 wrote every
    /// body with the seq of its update as `local_seq`, which becomes the body's key.
    private static func upgradeToOneRowPerDocument(_ connection: SQLiteConnection) throws {
        try connection.execute(documentTables)
        try connection.execute("ALTER TABLE db_meta ADD COLUMN external_size INTEGER NOT NULL DEFAULT 0")
        let docs = try connection.prepare("SELECT doc_rowid, doc_id, seq, deleted FROM docs")
        let revs = try connection.prepare(
            """
            SELECT rev_rowid, pos, hash, parent, deleted, body, local_seq FROM revs WHERE doc_rowid = ?
            ORDER BY rev_rowid
            """)
        let attachments = try connection.prepare(
            """
            SELECT name, content_type, digest, length, revpos, encoding, encoded_length, blob_key
            FROM rev_attachments WHERE rev_rowid = ? ORDER BY name
            """)
        let insertBody = try connection.prepare("INSERT INTO bodies (seq, body, attachments) VALUES (?, ?, ?)")
        let insertDocument = try connection.prepare(
            "INSERT INTO documents (seq, doc_id, deleted, tree, body, attachments) VALUES (?, ?, ?, ?, ?, ?)")
        var external = 0
        defer { docs.reset() }
        while try docs.step() {
            var rowids = [Int]()
            var parents = [Int?]()
            var nodes = [RevTree.LinkedNode]()
            var bodies = [BodyRef?]()
            let documentSeq = docs.int(2)
            var inline: (body: SQLiteValue, attachments: SQLiteValue) = (.null, .null)
            try revs.bind([.int(docs.int(0))])
            while try revs.step() {
                rowids.append(revs.int(0))
                parents.append(revs.optionalInt(3))
                var ref: BodyRef?
                if let body = revs.blob(5) {
                    let seq = revs.int(6)
                    guard seq > 0 else { throw StoreError.internalError("a stored body without its update seq") }
                    try attachments.bind([.int(revs.int(0))])
                    var infos = [AttachmentInfo]()
                    while try attachments.step() {
                        infos.append(
                            AttachmentInfo(
                                name: attachments.text(0), contentType: attachments.text(1),
                                digest: attachments.text(2), length: attachments.int(3), revpos: attachments.int(4),
                                encoding: attachments.optionalText(5), encodedLength: attachments.optionalInt(6),
                                blobKey: attachments.text(7)))
                    }
                    attachments.reset()
                    let encoded: SQLiteValue = infos.isEmpty ? .null : .blob(RowCodec.encodeAttachments(infos))
                    if seq == documentSeq {
                        inline = (.blob(body), encoded)
                    } else {
                        try insertBody.bind([.int(seq), .blob(body), encoded])
                        while try insertBody.step() {}
                        insertBody.reset()
                    }
                    ref = BodyRef(seq: seq, body: body, attachments: infos)
                }
                nodes.append(
                    RevTree.LinkedNode(
                        rev: RevID(pos: revs.int(1), hash: revs.text(2)), parent: nil, deleted: revs.int(4) != 0,
                        hasBody: ref != nil))
                bodies.append(ref)
            }
            revs.reset()
            let indexByRowid = Dictionary(rowids.enumerated().map { ($1, $0) }) { first, _ in first }
            for index in nodes.indices { nodes[index].parent = parents[index].flatMap { indexByRowid[$0] } }
            let stored = StoredTree(tree: RevTree(linked: nodes), bodies: bodies)
            external += stored.leafBodyBytes
            try insertDocument.bind([
                .int(documentSeq), .text(docs.text(1)), .int(docs.int(3)), .blob(RowCodec.encodeTree(stored)),
                inline.body, inline.attachments,
            ])
            while try insertDocument.step() {}
            insertDocument.reset()
        }
        try connection.run("UPDATE db_meta SET external_size = ? WHERE id = 1", [.int(external)])
        try connection.execute("DROP TABLE rev_attachments; DROP TABLE revs; DROP TABLE docs;")
    }

    /// Version 4: each body reference's size (and `sizes.external`) also counts the attachment bytes of its
    /// revision, as CouchDB's does; version 3 counted bodies only. The same numbers are recomputed from the stored
    /// bodies and attachment lists, in seq-ordered chunks so memory stays bounded.
    private static func recountExternalSizes(_ connection: SQLiteConnection) throws {
        let chunk = 1000
        let read = try connection.prepare("SELECT seq, tree FROM documents WHERE seq > ? ORDER BY seq LIMIT ?")
        let body = try connection.prepare(
            """
            SELECT body, attachments FROM documents WHERE seq = ?1 AND body IS NOT NULL
            UNION ALL SELECT body, attachments FROM bodies WHERE seq = ?1
            """)
        let rewrite = try connection.prepare("UPDATE documents SET tree = ? WHERE seq = ?")
        var external = 0
        var after = 0
        while true {
            var rows = [(seq: Int, stored: StoredTree)]()
            do {
                defer { read.reset() }
                try read.bind([.int(after), .int(chunk)])
                while try read.step() {
                    rows.append((read.int(0), try read.withBlob(1) { try RowCodec.decodeTree($0) }))
                }
            }
            guard let last = rows.last else { break }
            after = last.seq
            for var row in rows {
                for index in row.stored.bodies.indices {
                    guard let ref = row.stored.bodies[index] else { continue }
                    try body.bind([.int(ref.seq)])
                    defer { body.reset() }
                    guard try body.step() else { continue }
                    let bytes = body.blob(0) ?? []
                    let attachments = body.isNull(1) ? [] : try body.withBlob(1) { try RowCodec.decodeAttachments($0) }
                    row.stored.bodies[index] = BodyRef(seq: ref.seq, body: bytes, attachments: attachments)
                }
                external += row.stored.leafBodyBytes
                try rewrite.bind([.blob(RowCodec.encodeTree(row.stored)), .int(row.seq)])
                while try rewrite.step() {}
                rewrite.reset()
            }
        }
        try connection.run("UPDATE db_meta SET external_size = ? WHERE id = 1", [.int(external)])
    }
}
