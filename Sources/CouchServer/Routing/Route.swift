import CouchWire

/// One row of the route table: a path pattern, the methods it answers, who may call it, how much they may send,
/// and the handler. Routing, authorization, the drop credentials' scope and the body limit all read this one
/// value, so a path cannot be authorized one way and routed another.
package struct Route: Sendable {
    /// Answers a request the row has authorized with the response to send. The services it uses are its handler
    /// group's, given at the group's init.
    package typealias Handler = @Sendable (RequestContext) throws -> Response

    let pattern: PathPattern
    let methods: [HTTPMethod]
    package let access: Access
    /// What the one-time drop credentials of `couchlite receive` may do here.
    let drop: DropScope
    let body: BodyLimit
    /// Confines the row to one database (`_users` answers some paths with its own handlers and rules).
    let onlyIn: String?
    /// The reason of this path's 405 when CouchDB words it otherwise than by listing the methods.
    let notAllowedReason: String?
    let handler: Handler

    package init(
        _ methods: [HTTPMethod], _ pattern: String, _ access: Access, drop: DropScope = .closed,
        body: BodyLimit = .none, onlyIn: String? = nil, notAllowedReason: String? = nil, _ handler: @escaping Handler
    ) {
        self.methods = methods
        self.pattern = PathPattern(pattern)
        self.access = access
        self.drop = drop
        self.body = body
        self.onlyIn = onlyIn
        self.notAllowedReason = notAllowedReason
        self.handler = handler
    }

    /// Whether the request holds its database open (leased) while its handler runs: every route that names a
    /// `{db}`, wherever in its path (the gallery's `/_photos/api/db/{db}/…`), but creating and deleting one
    /// (`PUT`/`DELETE /{db}`), which must not hold it open.
    var leasesDatabase: Bool {
        guard pattern.segments.contains(.database) else { return false }
        return pattern.segments != [.database] || !methods.allSatisfy { $0 == .PUT || $0 == .DELETE }
    }

    /// Whether a body the drop credentials send here is charged against `receive --max-size`: on every row where what
    /// they send may be stored (documents and their attachments, `_local` checkpoints, the gallery's uploads).
    /// `_local` bodies were once left out, and a 20 MB drop stored 48 MB of `_local` documents (issue 35).
    var chargesDrop: Bool {
        switch drop {
        case .upload, .checkpoint: true
        case .ownDatabase: body == .attachment
        case .closed, .open, .exists: false
        }
    }

    /// Whether the row answers a request for `database` (nil for a server route).
    func applies(to database: String?) -> Bool {
        guard let onlyIn else { return true }
        return database.map { Array($0.utf8) == Array(onlyIn.utf8) } ?? false
    }
}

/// A handler group that declares its own rows beside its handlers (the shape of Hummingbird's and Vapor's
/// `RouteCollection`). The app joins the collections into one table (`App.routes`); the order of rows does not
/// matter, because the router tries the most specific pattern first (`PathPattern.isMoreSpecific`).
package protocol RouteCollection: Sendable {
    var routes: [Route] { get }
}

/// Who may call a route, in the terms of CouchDB's chttpd_auth_request.erl and each database's `_security`.
package enum Access: Sendable, Equatable {
    /// Anyone, logged in or not (the handler may still look at the user, as `_session` does).
    case anyone
    /// Server admins (401 for everyone else, logged in or not).
    case serverAdmin
    /// Server admins, named as CouchDB names its read-only metrics user too.
    case metricsReader
    /// The database's members (its admins and server admins included). In `_users`, someone who is not its admin
    /// gets only the rows confined to `_users` with a `users…` rule.
    case member
    /// As `member`, but in the system databases `_users` and `_replicator` only server admins may list
    /// (`_all_docs`, `_changes`).
    case memberListing
    /// The database's admins: writes to design documents, `PUT _revs_limit` (401 when anonymous, else 403).
    case databaseAdmin
    /// The database's admins, answered as CouchDB's maintenance endpoints answer (`_compact`, `_view_cleanup`:
    /// always 401).
    case maintenanceAdmin
    /// Any member of `_users`: each document written is checked as it is written (couch_users_db).
    case usersMember
    /// In `_users`, one's own user document; others' are 404 as if absent.
    case usersOwnDocument
    /// In `_users`, design documents: admins only, 403 for everyone else.
    case usersDesignRead

    /// Whether the rule needs the database the route names (opened, and 404 when missing).
    var needsDatabase: Bool {
        switch self {
        case .anyone, .serverAdmin, .metricsReader: false
        default: true
        }
    }
}

/// What `couchlite receive`'s one-time credentials may do on a route: exactly what a push replicator needs in its
/// one database (CouchDB's replicator, PouchDB and Couchbase Lite 1.x push with `GET /`, `/_session`, `GET /db`,
/// `_revs_diff`/`_missing_revs`, `_bulk_docs`, `PUT /db/doc`, `_local` checkpoints and `_ensure_full_commit`) and
/// the gallery's drop page. Nothing here reads documents back, so a phone holding the QR code cannot read the
/// photos of anyone else who used the same drop.
package enum DropScope: Sendable, Equatable {
    /// Refused (403).
    case closed
    /// Allowed, whatever database (server routes such as `GET /` and `/_session`, the gallery's page).
    case open
    /// Allowed in the credentials' own database only.
    case ownDatabase
    /// A write of documents into the credentials' own database (counted as the drop's activity).
    case upload
    /// The sender's `_local` checkpoints in its own database; couchlite's own `_local` documents stay closed.
    case checkpoint
    /// `PUT /db`: the database exists, so 412 `file_exists` (replicators with `create_target` and PouchDB create
    /// the target first, and CouchDB's replicator gives up on a 401 or 403 there).
    case exists
}

/// The most bytes a route's body may have; checked from the head, before any of it is read, and narrowed further
/// for anonymous requests (`Limits.anonymousRequestBytes`). Handlers keep their own, tighter checks where CouchDB
/// words the refusal itself (`document_too_large`).
package enum BodyLimit: Sendable, Equatable {
    /// The route reads no body.
    case none
    /// Control requests: `_local` documents, `_revs_limit`, `_session`, `_security`, `_replicate`.
    case small
    /// A JSON document, or one with its attachments as multipart or inline.
    case document
    /// `_bulk_docs`, `_bulk_get`, `_revs_diff`, `_all_docs` and `_changes` with keys, view queries.
    case bulk
    /// Attachment bytes, streamed (never held whole).
    case attachment

    package var bytes: Int? {
        switch self {
        case .none: nil
        case .small: Limits.smallRequestBytes
        case .document, .attachment: Limits.attachmentRequestBytes
        case .bulk: Limits.bulkRequestBytes
        }
    }
}

/// A route's path: literal segments and captures. Written as `/{db}/_design/{design}/_view/{view}`:
/// - `{db}` a database: any segment that does not start with `_`, or a system database (`_users`, `_replicator`,
///   `_global_changes`);
/// - `{doc}` a document id that does not start with `_`;
/// - `{name}` (any other word in braces) one segment, whatever it holds;
/// - `{path…}` one or more segments, joined with `/` (attachment names, metric paths); `{path…?}` zero or more.
/// `_local/x` and `_design/x` reach the table as two segments whether the client wrote the slash or `%2F`
/// (`Router.normalize`).
struct PathPattern: Sendable, Equatable, CustomStringConvertible {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case database
        case document
        case name(String)
        /// The remaining segments, joined with `/`: at least one, or any number when `optional`.
        case rest(String, optional: Bool)

        /// How much of a path the segment takes on: a literal one value, a capture any one segment, a rest many.
        var rank: Int {
            switch self {
            case .literal: 0
            case .database, .document, .name: 1
            case .rest: 2
            }
        }
    }

    let segments: [Segment]
    let description: String

    package init(_ text: String) {
        description = text
        segments = text.split(separator: "/").map { raw in
            let part = String(raw)
            guard part.hasPrefix("{"), part.hasSuffix("}") else { return .literal(part) }
            let word = String(part.dropFirst().dropLast())
            switch word {
            case "db": return .database
            case "doc": return .document
            default:
                if word.hasSuffix("…") { return .rest(String(word.dropLast()), optional: false) }
                if word.hasSuffix("…?") { return .rest(String(word.dropLast(2)), optional: true) }
                return .name(word)
            }
        }
    }

    /// The captures of `path` if it matches, else nil. A path of the wrong length is refused before any segment is
    /// looked at, and captures are kept only once the whole path matched.
    func match(_ path: [String]) -> RouteParameters? {
        guard path.count >= minimumCount && path.count <= maximumCount else { return nil }
        var database: String?
        var captures: [(String, String)] = []
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .literal(let literal):
                guard path[index].utf8Equals(literal) else { return nil }
            case .database:
                let value = path[index]
                guard !value.hasBytePrefix("_") || App.isSystemDatabase(value) else { return nil }
                database = value
            case .document:
                guard !path[index].hasBytePrefix("_") else { return nil }
                captures.append(("doc", path[index]))
            case .name(let key):
                captures.append((key, path[index]))
            case .rest(let key, _):
                captures.append((key, path[index...].joined(separator: "/")))
            }
        }
        var parameters = RouteParameters(database: database)
        for (key, value) in captures { parameters.values[key] = value }
        return parameters
    }

    /// Whether a path both patterns match is this pattern's rather than `other`'s: segment by segment, a literal
    /// beats a capture, and a capture beats the rest of the path (`/_node/{node}/_stats` before
    /// `/_node/{node}/{path…}`, `/{db}/_design/{design}/_view/{view}` before `/{db}/_design/{design}/{path…}`), and
    /// of two patterns equal as far as the shorter goes, the shorter (`/x` before `/x/{path…?}`, which matches it
    /// too). A total order of the segments' ranks, so sorting by it is well defined.
    func isMoreSpecific(than other: PathPattern) -> Bool {
        for (mine, theirs) in zip(segments, other.segments) where mine.rank != theirs.rank {
            return mine.rank < theirs.rank
        }
        return segments.count < other.segments.count
    }

    /// The fewest segments a path of this pattern has.
    private var minimumCount: Int {
        guard case .rest(_, let optional)? = segments.last else { return segments.count }
        return optional ? segments.count - 1 : segments.count
    }

    /// The most segments a path of this pattern has.
    private var maximumCount: Int {
        guard case .rest? = segments.last else { return segments.count }
        return Int.max
    }
}

/// What a route's pattern captured from the request's path.
package struct RouteParameters: Sendable, Equatable {
    /// The database a `{db}` route names.
    package var database: String?
    /// The other captures by name (`doc`, `design`, `local`, `view`, `path`, …).
    var values: [String: String] = [:]

    package subscript(_ key: String) -> String? { values[key] }
}
