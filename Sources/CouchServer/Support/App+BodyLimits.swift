import CouchWire

/// How much a request may send, decided from its head once it is authenticated and authorized, and
/// before any of its body is read.
///
/// Authorization refuses what a user may not do at all (401/403 without reading a byte); this bounds
/// what they may send where they are let in. Someone without an account, or an account asking `_users`
/// for no more than its own document, has no business sending megabytes: an anonymous 64 MiB
/// `POST /_users/_bulk_docs` is answered 413 at once instead of being read and parsed.
extension App {
    /// Applies the cap for `user` to the request body.
    /// - Throws: 413 `too_large` when the declared Content-Length is over the cap (nothing read).
    func limitBody(_ request: Request, _ user: UserContext) throws(CouchError) {
        guard request.body.hasBody, let cap = bodyCap(request, user) else { return }
        do {
            try request.body.limit(to: cap)
        } catch {
            throw .tooLarge("The request body is larger than this user may send (\(cap) bytes)")
        }
    }

    /// The body cap for `user` on this route, or nil for the route's own limits.
    func bodyCap(_ request: Request, _ user: UserContext) -> Int? {
        if user.isServerAdmin { return nil }
        if user.name == nil { return Limits.anonymousRequestBytes }
        if request.segments.first == App.usersDatabase, !isDatabaseAdmin(App.usersDatabase, user) {
            return Limits.anonymousRequestBytes
        }
        return nil
    }

    /// Refuses a bulk request of more than `Limits.maxBulkDocs` items (413) before any is processed.
    static func checkBulkCount(_ count: Int) throws(CouchError) {
        guard count <= Limits.maxBulkDocs else {
            throw .tooLarge("Too many documents in one request (\(count); at most \(Limits.maxBulkDocs))")
        }
    }
}
