/// The SQLite schema of one database file and its `PRAGMA user_version` migration ladder.
///
/// Rows are the truth; `RevTree` is the algorithm. Revisions keep `pos` and `hash` in separate columns so the
/// winner never depends on comparing `"N-hash"` strings. Parent links are maintained by the store (no foreign-key
/// enforcement: documents are never deleted, and stemming relinks survivors explicitly).
enum Schema {
    /// Each entry migrates from version `index` to `index + 1`.
    static let migrations: [String] = [
        """
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
        """,
        // Version 2: the leaf index covers what `_revs_diff` and `_changes` read of a leaf, so those queries
        // never visit the `revs` table (one B-tree descent per document instead of two). `is_leaf` is always 1
        // here but must be a column too: SQLite's planner counts the `is_leaf = 1` term as a table read otherwise.
        """
        DROP INDEX revs_leaves;
        CREATE INDEX revs_leaves ON revs(doc_rowid, pos, hash, deleted, is_leaf) WHERE is_leaf = 1;
        """,
    ]

    /// Brings `connection` to the latest version inside one transaction per step.
    static func migrate(_ connection: SQLiteConnection, uuid: String) throws {
        var version = try connection.scalarInt("PRAGMA user_version") ?? 0
        while version < migrations.count {
            try connection.execute("BEGIN IMMEDIATE")
            do {
                try connection.execute(migrations[version])
                if version == 0 {
                    try connection.run("INSERT INTO db_meta (id, uuid) VALUES (1, ?)", [.text(uuid)])
                }
                version += 1
                try connection.execute("PRAGMA user_version = \(version)")
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }
}
