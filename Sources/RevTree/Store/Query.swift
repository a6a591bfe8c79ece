/// The statements on hot paths, prepared once per connection and fetched by array slot
/// (`SQLiteConnection.statement(_:)`), so a call neither parses nor hashes SQL text.
enum Query: Int, CaseIterable {
    case begin, beginImmediate, commit, rollback, savepoint, release, rollbackToSavepoint
    case loadMeta, saveMeta
    case docByID
    case treeRows
    case insertDoc, updateDoc
    case insertRev, updateRevWithBody, updateRevLinks, deleteRev
    case deleteRevAttachments, insertAttachment, findAttachment
    case revisionRow, revisionAttachments
    case revExists, leaves, leavesByDocID
    case changesAscending, changesDescending
    case localDocument

    /// `_changes` rows: each document after a seq with every leaf, one row per leaf.
    private static let changes = """
        SELECT d.seq, d.doc_id, d.deleted, d.winner_pos, d.winner_hash, r.pos, r.hash, r.deleted
        FROM docs d JOIN revs r ON r.doc_rowid = d.doc_rowid AND r.is_leaf = 1 WHERE d.seq > ?
        """

    var sql: String {
        switch self {
        case .begin: "BEGIN"
        case .beginImmediate: "BEGIN IMMEDIATE"
        case .commit: "COMMIT"
        case .rollback: "ROLLBACK"
        case .savepoint: "SAVEPOINT job"
        case .release: "RELEASE job"
        case .rollbackToSavepoint: "ROLLBACK TO job"
        case .loadMeta: "SELECT update_seq, revs_limit, doc_count, doc_del_count, purge_seq FROM db_meta WHERE id = 1"
        case .saveMeta: "UPDATE db_meta SET update_seq = ?, doc_count = ?, doc_del_count = ? WHERE id = 1"
        case .docByID: "SELECT doc_rowid, seq, deleted FROM docs WHERE doc_id = ?"
        case .treeRows:
            "SELECT rev_rowid, pos, hash, parent, deleted, body IS NOT NULL FROM revs WHERE doc_rowid = ?"
        case .insertDoc: "INSERT INTO docs (doc_id, seq, winner_pos, winner_hash, deleted) VALUES (?, ?, ?, ?, ?)"
        case .updateDoc: "UPDATE docs SET seq = ?, winner_pos = ?, winner_hash = ?, deleted = ? WHERE doc_rowid = ?"
        case .insertRev:
            """
            INSERT INTO revs (doc_rowid, pos, hash, parent, is_leaf, deleted, body, local_seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        case .updateRevWithBody:
            "UPDATE revs SET parent = ?, is_leaf = ?, deleted = ?, body = ?, local_seq = ? WHERE rev_rowid = ?"
        case .updateRevLinks: "UPDATE revs SET parent = ?, is_leaf = ?, deleted = ? WHERE rev_rowid = ?"
        case .deleteRev: "DELETE FROM revs WHERE rev_rowid = ?"
        case .deleteRevAttachments: "DELETE FROM rev_attachments WHERE rev_rowid = ?"
        case .insertAttachment:
            """
            INSERT INTO rev_attachments
              (rev_rowid, name, content_type, digest, length, revpos, encoding, encoded_length, blob_key)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        case .findAttachment:
            """
            SELECT name, content_type, digest, length, revpos, encoding, encoded_length, blob_key
            FROM rev_attachments WHERE rev_rowid = ? AND name = ?
            """
        case .revisionRow: "SELECT deleted, body, local_seq FROM revs WHERE rev_rowid = ?"
        case .revisionAttachments:
            """
            SELECT name, content_type, digest, length, revpos, encoding, encoded_length, blob_key
            FROM rev_attachments WHERE rev_rowid = ? ORDER BY name
            """
        case .revExists: "SELECT 1 FROM revs WHERE doc_rowid = ? AND pos = ? AND hash = ?"
        case .leaves: "SELECT pos, hash, deleted FROM revs WHERE doc_rowid = ? AND is_leaf = 1"
        case .leavesByDocID:
            """
            SELECT d.doc_rowid, r.pos, r.hash, r.deleted
            FROM docs d JOIN revs r ON r.doc_rowid = d.doc_rowid AND r.is_leaf = 1 WHERE d.doc_id = ?
            """
        case .changesAscending: Query.changes + " ORDER BY d.seq ASC"
        case .changesDescending: Query.changes + " ORDER BY d.seq DESC"
        case .localDocument: "SELECT rev, body FROM local_docs WHERE doc_id = ?"
        }
    }
}
