/// The statements on hot paths, prepared once per connection and fetched by array slot
/// (`SQLiteConnection.statement(_:)`), so a call neither parses nor hashes SQL text.
enum Query: Int, CaseIterable {
    case begin, beginImmediate, commit, rollback, savepoint, release, rollbackToSavepoint
    case loadMeta, saveMeta
    case documentByID, insertDocument, updateDocument
    case insertBody, deleteBody, body, bodyAttachments
    case changesAscending, changesDescending
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
            "INSERT INTO documents (seq, doc_id, deleted, tree) VALUES (?, ?, ?, ?) ON CONFLICT (doc_id) DO NOTHING"
        case .updateDocument: "UPDATE documents SET seq = ?, deleted = ?, tree = ? WHERE seq = ?"
        case .insertBody: "INSERT INTO bodies (seq, body, attachments) VALUES (?, ?, ?)"
        case .deleteBody: "DELETE FROM bodies WHERE seq = ?"
        case .body: "SELECT body, attachments FROM bodies WHERE seq = ?"
        case .bodyAttachments: "SELECT attachments FROM bodies WHERE seq = ?"
        case .changesAscending: Query.changes + " ORDER BY seq ASC"
        case .changesDescending: Query.changes + " ORDER BY seq DESC"
        case .localDocument: "SELECT rev, body FROM local_docs WHERE doc_id = ?"
        }
    }
}
