/// Why a replication (or one request of it) failed, worded for the person who started it.
public enum ReplicationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing listens at the peer's address.
    case connectionRefused(String)
    /// The peer dropped the connection mid-request.
    case connectionReset(String)
    /// The peer did not answer in time.
    case timeout(String)
    /// The host name did not resolve or the network is unreachable.
    case unreachable(String)
    /// The peer answered something that is not HTTP/1.x, or a reply too big or of the wrong shape.
    case protocolError(String)
    /// The peer sent its reply too slowly (bytes trickling in): the peer and what was too slow. Not retried:
    /// a peer that drips a byte now and then would otherwise hold the replication for ever.
    case tooSlow(String, String)
    /// 401 on a whole endpoint: the credentials are wrong (or missing).
    case unauthorized(String)
    /// 403 on a whole endpoint.
    case forbidden(String)
    /// The database does not exist (and `create_target` was not asked for).
    case databaseNotFound(String)
    /// A redirect, which the replicator does not follow silently.
    case redirected(String)
    /// The peer answered an unexpected status.
    case httpStatus(Int, String)
    /// The peer's disk is full (507, or CouchDB's `insufficient_storage`).
    case insufficientStorage(String)
    /// The peer's TLS certificate did not pass: the peer and what did not match (pin, issuer, name, dates).
    case certificateRejected(String, String)
    /// The TLS handshake failed for another reason (the peer does not speak TLS, no common protocol, …).
    case tlsFailed(String, String)
    /// Bad options (`_replicate` body, command line).
    case badRequest(String)
    /// The source has no such filter function (`filter: "ddoc/name"`); the reason as CouchDB words it.
    case filterNotFound(String)
    /// Stopped by `cancel`, or by `stop` once the checkpoint is written.
    case cancelled

    public var description: String {
        switch self {
        case .connectionRefused(let peer): "connection refused by \(peer) (is the server running?)"
        case .connectionReset(let peer): "connection reset by \(peer)"
        case .timeout(let peer): "timed out waiting for \(peer)"
        case .tooSlow(let peer, let detail): "\(peer) is too slow: \(detail)"
        case .unreachable(let peer): "cannot reach \(peer)"
        case .protocolError(let detail): "protocol error: \(detail)"
        case .unauthorized(let endpoint): "unauthorized: wrong user name or password for \(endpoint)"
        case .forbidden(let endpoint): "forbidden: the user may not replicate \(endpoint)"
        case .databaseNotFound(let endpoint): "database does not exist: \(endpoint)"
        case .redirected(let location): "the peer redirects to \(location); use that URL"
        case .httpStatus(let status, let detail): "unexpected HTTP \(status): \(detail)"
        case .insufficientStorage(let endpoint): "the disk of \(endpoint) is full"
        case .certificateRejected(let peer, let reason): "refused the certificate of \(peer): \(reason)"
        case .tlsFailed(let peer, let detail): "TLS with \(peer) failed: \(detail)"
        case .badRequest(let reason): reason
        case .filterNotFound(let reason): reason
        case .cancelled: "replication cancelled"
        }
    }

    /// Worth retrying after a pause: the network or the peer may come back.
    var isTransient: Bool {
        switch self {
        case .connectionRefused, .connectionReset, .timeout, .unreachable: true
        case .httpStatus(let status, _): status >= 500 || status == 408 || status == 429
        default: false
        }
    }
}
