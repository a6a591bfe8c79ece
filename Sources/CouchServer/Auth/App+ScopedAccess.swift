import CouchWire

/// What a temporary account (`TemporaryAccounts`, `couchlite receive`'s one-time credentials) may do: exactly
/// what a push replicator needs in its one database, and nothing else.
///
/// CouchDB's replicator, PouchDB and Couchbase Lite 1.x push with `GET /` (the server uuid), `/_session`,
/// `GET /db`, `_revs_diff` (`_missing_revs` for old replicators), `_bulk_docs`, `PUT /db/doc` (multipart, or
/// JSON after a 415), `_local` checkpoints and `_ensure_full_commit`. Reading documents back, feeds,
/// `_all_docs`, `_security`, design documents, attachments on their own, other databases and every
/// server-wide endpoint stay closed (the gallery's drop page and its upload are open: `authorizeScopedGallery`), so a phone holding the QR code cannot read the photos of anyone else
/// who used the same drop.
extension App {
    /// The `_local` documents couchlite itself keeps in a database (the receive position); temporary accounts
    /// may not read or write them.
    static let reservedLocalPrefix = "_local/couchlite-"

    /// Throws 403 unless `user`, confined to `scope`, may make this request.
    func authorizeScoped(_ request: Request, scope: String) throws(CouchError) {
        let segments = request.segments
        let method = request.method
        guard let first = segments.first else {
            guard method == "GET" || method == "HEAD" else { throw App.scopeError(scope) }
            return
        }
        if first == "_session" && segments.count == 1 { return }
        if first == "_photos" { return try authorizeScopedGallery(segments, method, scope: scope) }
        guard Array(first.utf8) == Array(scope.utf8) else { throw App.scopeError(scope) }
        if segments.count == 1 {
            // `create_target` replications and PouchDB `PUT` the target first; what exists is 412 for them all,
            // and the CouchDB replicator gives up on a 401 or 403 there.
            if method == "PUT" { throw .fileExists }
            guard method == "GET" || method == "HEAD" else { throw App.scopeError(scope) }
            return
        }
        let second = segments[1]
        let endpoint = ["_revs_diff", "_missing_revs", "_bulk_docs", "_ensure_full_commit"]
        if endpoint.contains(second) {
            guard method == "POST", segments.count == 2 else { throw App.scopeError(scope) }
            return
        }
        // `_local/x` arrives as two segments, or as one when the slash was sent as %2F.
        let localID = second == "_local" && segments.count == 3 ? "_local/" + segments[2] : second
        if localID.hasPrefix("_local/") && (segments.count == 2 || second == "_local") {
            guard ["GET", "HEAD", "PUT"].contains(method) else { throw App.scopeError(scope) }
            return try requireUnreservedLocal(localID)
        }
        // A document write: multipart or JSON `PUT /db/doc`, never a design document.
        guard method == "PUT", segments.count == 2, !second.hasPrefix("_") else { throw App.scopeError(scope) }
    }

    /// The gallery as a drop page: its assets, the album list (which holds no album: a temporary account reads
    /// nothing back) and uploads into its one database. A phone without a replicator app scans the QR code,
    /// signs in with the one-time name and password, and sends photos from the browser.
    private func authorizeScopedGallery(_ segments: [String], _ method: String, scope: String) throws(CouchError) {
        let reading = method == "GET" || method == "HEAD"
        switch segments.count {
        case 1:
            if reading { return }
        case 2 where segments[1] != "api":
            if reading { return }
        case 3 where segments[1] == "api" && segments[2] == "dbs":
            if reading { return }
        case 5 where segments[1] == "api" && segments[2] == "db" && segments[4] == "upload":
            if method == "POST" && Array(segments[3].utf8) == Array(scope.utf8) { return }
        default: break
        }
        throw App.scopeError(scope)
    }

    /// For `_local` writers (also inside `_bulk_docs`): couchlite's own `_local` documents are off limits to
    /// temporary accounts.
    func requireUnreservedLocal(_ docID: String, _ user: UserContext = UserContext.current) throws(CouchError) {
        guard user.scope != nil, docID.hasPrefix(App.reservedLocalPrefix) else { return }
        throw .forbidden("This document is reserved for couchlite.")
    }

    static func scopeError(_ scope: String) -> CouchError {
        .forbidden("These one-time credentials may only push to the database \(scope).")
    }
}
