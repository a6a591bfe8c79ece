import CouchWire
import Foundation
import Synchronization

/// A cookie session with a peer, as CouchDB's replicator keeps one (couch_replicator_auth_session):
/// with credentials in the URL it logs in once with `POST /_session`, then sends `Cookie: AuthSession=…`
/// instead of the password on every request (a peer checks a cookie far more cheaply than a PBKDF2 hash).
/// A peer without `/_session` (Couchbase Lite, PhotoDrop) gets Basic auth, as before.
public final class Session: Sendable {
    let user: String
    let password: String
    private let state = Mutex<State>(.notTried)

    enum State: Equatable {
        case notTried
        case cookie(String)
        /// No `/_session` on the peer, or it set no cookie: Basic auth on every request.
        case basic
    }

    init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    var current: State { state.withLock { $0 } }

    func set(_ new: State) { state.withLock { $0 = new } }

    /// The `AuthSession` value of a `Set-Cookie` header, if it sets one.
    static func cookie(fromSetCookie header: String) -> String? {
        guard let first = header.split(separator: ";").first else { return nil }
        let pair = first.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters() }
        guard pair.count == 2, pair[0] == "AuthSession", !pair[1].isEmpty else { return nil }
        return pair[1]
    }

    /// `name=…&password=…`, form-encoded.
    var formBody: [UInt8] {
        Array("name=\(PathEncoding.query(user))&password=\(PathEncoding.query(password))".utf8)
    }
}

extension Replication {
    /// Logs in to `endpoint` if it has credentials and no session yet; 401 is a wrong password.
    func startSession(_ endpoint: Endpoint) throws(ReplicationError) {
        guard let session = endpoint.session, session.current == .notTried else { return }
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/x-www-form-urlencoded")
        headers.add("Accept", "application/json")
        headers.add("User-Agent", "couchlite-replicator/1")
        let request = ClientRequest(
            method: "POST", target: endpoint.rootPath + "/_session", headers: headers, body: .bytes(session.formBody))
        let response = try call(endpoint, request, authenticate: false)
        response.discard()
        if response.status == 401 { throw .unauthorized(endpoint.display) }
        let cookie =
            response.status == 200 ? response.headers.values("Set-Cookie").lazy.compactMap(Session.cookie).first : nil
        session.set(cookie.map(Session.State.cookie) ?? .basic)
    }

    /// Puts the session's cookie on `request` in place of the password.
    func authenticated(_ request: ClientRequest, _ endpoint: Endpoint) -> ClientRequest {
        guard let session = endpoint.session, case .cookie(let cookie) = session.current else { return request }
        var request = request
        request.headers.remove("Authorization")
        request.headers.set("Cookie", "AuthSession=\(cookie)")
        return request
    }
}
