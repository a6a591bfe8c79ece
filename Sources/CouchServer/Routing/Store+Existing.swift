import CouchStore

extension Store {
    /// Opens an existing database.
    /// - Throws: 404 `Database does not exist.` when there is none of that name.
    func existing(_ name: String) throws(CouchError) -> Database {
        do {
            return try open(name)
        } catch {
            throw CouchError(error)
        }
    }
}
