import CSQLite

/// A failed SQLite call: result code, SQLite's message and the statement (GRDB's `DatabaseError` shape).
struct SQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var sql: String?

    var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " - while executing `\($0)`" } ?? "")
    }
}
