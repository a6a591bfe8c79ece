import CouchWire

/// Replications with a JavaScript filter of the source (`filter: "ddoc/name"`, `query_params`).
extension Replication {
    /// A replication whose options carry the source's filter code, fetched first when `options.filter` names one
    /// (the code is part of the replication id, as in CouchDB, which fetches it the same way).
    /// - Throws: `.badRequest` for a filter that is not `ddoc/name`, `.filterNotFound` when the source has no
    ///   such design document or function, or the error of the request.
    public static func resolvingFilter(source: Endpoint, target: Endpoint, options: ReplicationOptions)
        throws(ReplicationError) -> Replication
    {
        guard let filter = options.filter, options.filterCode == nil else {
            return Replication(source: source, target: target, options: options)
        }
        let probe = Replication(source: source, target: target, options: options)
        var resolved = options
        resolved.filterCode = try probe.fetchFilterCode(filter)
        return Replication(source: source, target: target, options: resolved)
    }

    /// `filters.<name>` of the source's `_design/<ddoc>`.
    func fetchFilterCode(_ filter: String) throws(ReplicationError) -> String {
        let parts = filter.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw .badRequest("Invalid filter. Must match `ddocname/filtername`.")
        }
        let ddoc = String(parts[0])
        let name = String(parts[1])
        let response = try call(source, source.request("GET", "/_design/" + PathEncoding.segment(ddoc)))
        if response.status == 404 {
            response.discard()
            throw .filterNotFound(
                "Couldn't open document `_design/\(ddoc)` from source database `\(source.display)`: not_found")
        }
        let doc = try expect(response, source, [200], "_design/\(ddoc)", limit: ReplyLimit.documents)
        guard let code = doc["filters"]?[name]?.stringValue else {
            throw .filterNotFound(
                "Couldn't parse filter code from document \(ddoc) on `\(source.display)`: missing json key: \(name)")
        }
        return code
    }
}
