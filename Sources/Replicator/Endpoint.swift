import CouchWire
import Foundation

/// One end of a replication: a database reached over HTTP, either at a URL or in-process (a local
/// database served over a socket pair, see `HTTPLocalServer`).
public struct Endpoint: Sendable {
    public let client: HTTPClient
    /// The database's path on the peer, percent-encoded, without a trailing slash (`/photos`).
    public let basePath: String
    /// `Authorization` sent with every request (Basic, from the URL's user info), or nil.
    public let authorization: String?
    /// Headers given with the endpoint (`_replicate`'s `{"url","headers"}`).
    let extraHeaders: HTTPHeaders
    /// The endpoint as shown to people: the URL without its password, or the local database name.
    public let display: String
    /// The URL without any credentials (CouchDB's `could not open …` reason), or the local name.
    public let redacted: String
    /// The cookie session used instead of Basic auth where the peer has `/_session`.
    let session: Session?
    /// The user name of the URL's credentials (a cookie session's), if it has any.
    public var userName: String? { session?.user }
    /// The path before the database's (`/couch` for `http://host/couch/db`), where `/_session` is.
    var rootPath: String {
        guard let slash = basePath.lastIndex(of: "/") else { return "" }
        return String(basePath[..<slash])
    }
    /// What the replication id is computed from (the URL without password; `local:` plus the name).
    let identity: String
    /// How the peer's certificate is checked; nil for plain HTTP and local databases.
    public let trust: PeerTrust?

    /// A remote database from a `http[s]://[user:pass@]host[:port]/[prefix/]db[#sha256=HEX]` URL. `trust` says
    /// how an `https://` peer's certificate is checked; a `#sha256=` fragment pins it (the fragment, like any,
    /// is never sent). A pin or other trust option on an `http://` URL is refused rather than ignored: the
    /// person asked for a checked peer and would get a clear-text one.
    public static func remote(
        url text: String, headers: HTTPHeaders = HTTPHeaders(), trust: PeerTrust = PeerTrust()
    ) throws(ReplicationError) -> Endpoint {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased() else {
            throw .badRequest("Not a URL: \(text)")
        }
        guard scheme == "http" || scheme == "https" else { throw .badRequest("Unsupported URL scheme: \(text)") }
        guard let host = url.host, !host.isEmpty else { throw .badRequest("The URL has no host: \(text)") }
        var path = url.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        guard !path.isEmpty else { throw .badRequest("The URL names no database: \(text)") }
        var authorization: String?
        var session: Session?
        if let user = url.user {
            session = Session(user: url.user ?? "", password: url.password ?? "")
            let credentials = user + ":" + (url.password ?? "")
            authorization = "Basic " + Data(credentials.utf8).base64EncodedString()
        }
        let secure = scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        // Foundation keeps an IPv6 literal's brackets in `host` on Linux, not on Darwin.
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let redacted = "\(scheme)://\(shownHost):\(port)\(path)/"
        let shown = "\(scheme)://" + (url.user.map { "\($0)@" } ?? "") + "\(shownHost):\(port)\(path)/"
        var trust = trust
        if let pin = try fragmentPin(url.fragment, redacted) {
            if let given = trust.pin, given != pin {
                throw .badRequest(
                    "The pin in the URL (#sha256=\(pin.colonHex)) and the pin given with it (\(given.colonHex)) differ")
            }
            trust.pin = pin
        }
        if !secure && !trust.isDefault {
            throw .badRequest(
                "Certificate options (a pin, a CA file, insecure) need an https:// URL; \(redacted) is plain HTTP")
        }
        let context = secure ? try trust.context() : nil
        return Endpoint(
            client: HTTPClient(peer: .tcp(host: host, port: port), tls: context),
            basePath: path, authorization: authorization, extraHeaders: headers, display: shown, redacted: redacted,
            session: session, identity: shown, trust: secure ? trust : nil)
    }

    /// The pin of a `#sha256=HEX` fragment (`&`-separated parameters; others are ignored, as browsers do).
    static func fragmentPin(_ fragment: String?, _ url: String) throws(ReplicationError) -> TLSFingerprint? {
        guard let fragment, !fragment.isEmpty else { return nil }
        var found: TLSFingerprint?
        for parameter in fragment.split(separator: "&") {
            let parts = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].lowercased() == "sha256" else { continue }
            let pin: TLSFingerprint
            do {
                pin = try PeerTrust.parsePin(String(parts[1]))
            } catch {
                throw .badRequest("The #sha256= fragment of \(url) is not a fingerprint: \(error.description)")
            }
            if let found, found != pin { throw .badRequest("The URL \(url) has two different #sha256= pins") }
            found = pin
        }
        return found
    }

    /// The same endpoint over a new client and session: a run of a scheduled job uses its own, so that the stop
    /// of one run (which interrupts its clients) cannot reach the next, and a waiting job holds no connection.
    public func fresh() -> Endpoint {
        Endpoint(
            client: client.fresh(), basePath: basePath, authorization: authorization, extraHeaders: extraHeaders,
            display: display, redacted: redacted,
            session: session.map { Session(user: $0.user, password: $0.password) },
            identity: identity, trust: trust)
    }

    /// A database of this process, reached through `connect` (an in-process server's socket pairs).
    public static func local(
        name: String, identity: String, connect: @escaping @Sendable () -> Int32?
    ) -> Endpoint {
        Endpoint(
            client: HTTPClient(peer: .local(name: name, connect: connect)), basePath: "/" + PathEncoding.segment(name),
            authorization: nil, extraHeaders: HTTPHeaders(), display: name, redacted: name, session: nil,
            identity: "local:\(identity)/\(name)", trust: nil)
    }

    /// Whether `text` names a remote endpoint (a URL) rather than a local database.
    public static func isURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// A request for `path` under the database (`""`, `"/_changes?…"`), with the endpoint's headers.
    public func request(
        _ method: String, _ path: String, json: JSON? = nil, accept: String = "application/json",
        timeout: Duration = ClientRequest.peerTimeout
    ) -> ClientRequest {
        var headers = HTTPHeaders()
        headers.add("Accept", accept)
        headers.add("User-Agent", "couchlite-replicator/1")
        if let authorization { headers.add("Authorization", authorization) }
        for (name, value) in extraHeaders { headers.set(name, value) }
        var body = ClientRequest.Body.none
        if let json {
            headers.add("Content-Type", "application/json")
            body = .bytes(json.serialized())
        }
        return ClientRequest(method: method, target: basePath + path, headers: headers, body: body, timeout: timeout)
    }
}

/// Percent-encoding of URL parts the replicator builds.
public enum PathEncoding {
    /// One path segment: everything but unreserved characters is escaped (`/` → `%2F`).
    public static func segment(_ text: String) -> String { PercentEncoding.segment(text) }

    /// A document id in a path: `_design/x` keeps its slash, as CouchDB's replicator sends it.
    public static func docID(_ id: String) -> String {
        if id.hasPrefix("_design/") { return "_design/" + segment(String(id.dropFirst(8))) }
        if id.hasPrefix("_local/") { return "_local/" + segment(String(id.dropFirst(7))) }
        return segment(id)
    }

    /// A query value.
    public static func query(_ text: String) -> String { PercentEncoding.encode(text) }
}
