/// The statements on hot paths, prepared once per connection and fetched by array slot
/// (`SQLiteConnection.statement(_:)`), so a call neither parses nor hashes SQL text.
enum Query: Int, CaseIterable {
    case begin, beginImmediate, commit, rollback, savepoint, release, rollbackToSavepoint
    case loadMeta, saveMeta
    case documentByID, insertDocument, updateDocument
    case keepBody, deleteBody, body, bodyAttachments
    case changesAscending, changesDescending, changesBefore
    case localDocument

    /// `_changes` rows: each document after a seq, with its tree.
    private static let changes = "SELECT seq, doc_id, deleted, tree FROM documents WHERE seq > ?"

    var sql: String {
        switch self {
        case .begin: "BEGIN"
        case .beginImmediate: "BEGIN IMMEDIATE"
        case .commit: "COMMIT"
        case .rollback: "ROLLBACK"
        case .savepoint: "SAVEPOINT job"
        case .release: "RELEASE job"
        case .rollbackToSavepoint: "ROLLBACK TO job"
        case .loadMeta:
            """
            SELECT update_seq, revs_limit, doc_count, doc_del_count, purge_seq, external_size FROM db_meta
            WHERE id = 1
            """
        case .saveMeta:
            "UPDATE db_meta SET update_seq = ?, doc_count = ?, doc_del_count = ?, external_size = ? WHERE id = 1"
        case .documentByID: "SELECT seq, deleted, tree FROM documents WHERE doc_id = ?"
        case .insertDocument:
            """
            INSERT OR IGNORE INTO documents (seq, doc_id, deleted, tree, body, attachments) VALUES (?, ?, ?, ?, ?, ?)
            """
        case .updateDocument:
            "UPDATE documents SET seq = ?, deleted = ?, tree = ?, body = ?, attachments = ? WHERE seq = ?"
        case .keepBody:
            """
            INSERT INTO bodies (seq, body, attachments)
            SELECT seq, body, attachments FROM documents WHERE seq = ? AND body IS NOT NULL
            """
        case .deleteBody: "DELETE FROM bodies WHERE seq = ?"
        // A body is in its document's row or in `bodies`, never both; one statement looks in both.
        case .body:
            """
            SELECT body, attachments FROM documents WHERE seq = ?1 AND body IS NOT NULL
            UNION ALL SELECT body, attachments FROM bodies WHERE seq = ?1
            """
        case .bodyAttachments:
            """
            SELECT attachments FROM documents WHERE seq = ?1 AND body IS NOT NULL
            UNION ALL SELECT attachments FROM bodies WHERE seq = ?1
            """
        case .changesAscending: Query.changes + " ORDER BY seq ASC"
        case .changesDescending: Query.changes + " ORDER BY seq DESC"
        case .changesBefore: "SELECT seq, doc_id, deleted, tree FROM documents WHERE seq < ? ORDER BY seq DESC"
        case .localDocument: "SELECT rev, body FROM local_docs WHERE doc_id = ?"
        }
    }
}
