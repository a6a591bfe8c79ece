import Replicator

extension ReplicationError {
    /// Why a `_replicator` job crashed, worded as CouchDB 3.4.3's scheduler shows it (`info.error` of a crashing
    /// job, a `crashed` history entry's `reason`): an Erlang term for network errors
    /// (`{http_request_failed,"GET","http://host:1/db/",{error,{error,{conn_failed,{error,econnrefused}}}}}`),
    /// `db_not_found: could not open …`, and `{replication_auth_error,…}` for a wrong password. CouchDB prints its
    /// terms over several lines where they are long; these stay on one. Errors CouchDB has no word for keep
    /// couchlite's description.
    func schedulerReason(source: Endpoint, target: Endpoint) -> String {
        /// The endpoint a network error names by its `host:port`.
        func endpoint(of peer: String) -> Endpoint { target.client.peerName == peer ? target : source }
        func requestFailed(_ peer: String, _ detail: String) -> String {
            "{http_request_failed,\"GET\",\"\(endpoint(of: peer).redacted)\",{error,\(detail)}}"
        }
        switch self {
        case .connectionRefused(let peer): return requestFailed(peer, "{error,{conn_failed,{error,econnrefused}}}")
        case .unreachable(let peer): return requestFailed(peer, "{error,{conn_failed,{error,nxdomain}}}")
        case .connectionReset(let peer): return requestFailed(peer, "{error,connection_closing}")
        case .timeout(let peer): return requestFailed(peer, "{error,req_timedout}")
        case .databaseNotFound(let name): return "db_not_found: could not open \(name)"
        case .unauthorized(let shown):
            let failed = [source, target].first { $0.display == shown } ?? source
            guard let user = failed.userName else {
                return "unauthorized: unauthorized to access or create database \(failed.redacted)"
            }
            let session =
                failed.redacted.dropLast().split(separator: "/", omittingEmptySubsequences: false)
                .dropLast().joined(separator: "/") + "/_session"
            return "{replication_auth_error,{session_request_unauthorized,\"\(session)\",\"\(user)\"}}"
        default: return description
        }
    }
}
