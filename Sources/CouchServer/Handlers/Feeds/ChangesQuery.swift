import CouchQuery
import CouchStore
import CouchWire
import QueryServer

/// The parameters of one `_changes` request, read as `chttpd_db:parse_changes_query` reads them: names in any
/// case, in order, a later one overriding an earlier one; the flags (`descending`, `include_docs`, `conflicts`,
/// `attachments`, `att_encoding_info`) turn on only for exactly `true` and ignore every other value; unknown
/// names are ignored. `last-event-id` is another spelling of `since` (EventSource reconnects send it), and an
/// `eventsource` feed's `Last-Event-ID` header overrides both.
struct ChangesQuery {
    enum Feed: String { case normal, longpoll, continuous, eventsource }
    enum Filter {
        case none
        case docIDs(Set<String>)
        case selector(Selector)
        case design
        /// `filter=_view`: documents the view's map function emits for.
        case view(ViewGroup, Int)
        /// `filter=ddoc/name`: the design document's `filters.<name>` in JavaScript.
        case function(DesignDocument, name: String)
    }

    var feed = Feed.normal
    var since = 0
    var limit: Int?
    var descending = false
    var allDocsStyle = false
    var includeDocs = false
    var render = RenderOptions()
    var heartbeat: Duration?
    var timeout: Duration
    var seqInterval: Int?
    /// Where `seq_interval`'s countdown starts: the limit as given (negative too), else `unlimited`.
    var seqCountdown = ChangesQuery.unlimited
    var filter = Filter.none
    /// A `POST`'s JSON body (filters see it as `req.body`).
    var body: JSONObject?

    /// Default wait of a live feed with no heartbeat (CouchDB's `changes_timeout`, 60 s).
    static let defaultTimeout = Duration.seconds(60)
    /// How often a waiting feed checks that its client is still there.
    static let livenessInterval = Duration.seconds(1)
    /// CouchDB's `#changes_args.limit` when none is given; `seq_interval` counts down from it.
    static let unlimited = 1_000_000_000_000_000

    init(_ request: Request, database: Database, regexMemory: RegexMemory = .server) throws {
        var feedText = "normal"
        var sinceText: String?
        var styleText = "main_only"
        var filterName: String?
        timeout = ChangesQuery.defaultTimeout
        for (rawName, value) in request.query.pairs {
            switch (rawName.lowercased(), value) {
            case ("feed", _): feedText = value
            case ("descending", "true"): descending = true
            case ("since", _), ("last-event-id", _): sinceText = value
            case ("limit", _):
                limit = try ChangesQuery.limit(value)
                seqCountdown = Int(value) ?? ChangesQuery.unlimited
            case ("style", _): styleText = value
            case ("heartbeat", _): heartbeat = try ChangesQuery.heartbeat(value)
            case ("timeout", _): timeout = .milliseconds(try ChangesQuery.integer(value))
            case ("include_docs", "true"): includeDocs = true
            case ("conflicts", "true"): render.conflicts = true
            case ("attachments", "true"): render.attachments = true
            case ("att_encoding_info", "true"): render.attEncodingInfo = true
            case ("filter", _): filterName = value
            case ("seq_interval", _):
                guard let interval = Int(value), interval > 0 else {
                    throw CouchError.badRequest("invalid_seq_interval")
                }
                seqInterval = interval
            default: continue
            }
        }
        switch feedText {
        case "normal": feed = .normal
        case "longpoll": feed = .longpoll
        case "continuous", "live": feed = .continuous
        case "eventsource": feed = .eventsource
        default: throw CouchError.badRequest("Supported `feed` types: normal, continuous, live, longpoll, eventsource")
        }
        if feed == .eventsource, let lastEventID = request.head.headers["Last-Event-ID"] { sinceText = lastEventID }
        switch styleText {
        case "main_only": allDocsStyle = false
        case "all_docs": allDocsStyle = true
        default: throw CouchError.badRequest("Supported `style` values: main_only, all_docs")
        }
        if let sinceText {
            if sinceText == "now" {
                since = database.updateSeq
            } else if let seq = UpdateSeq.parse(sinceText) {
                since = seq
            } else {
                throw CouchError.badRequest("Malformed sequence supplied in 'since' parameter.")
            }
        }
        let body: JSONObject? =
            request.verb == .POST && request.body.hasBody
            ? try request.jsonObjectBody(limit: Limits.bulkRequestBytes) : nil
        self.body = body
        filter = try ChangesQuery.filter(filterName, request, database, body: body, regexMemory: regexMemory)
    }

    private static func integer(_ value: String) throws(CouchError) -> Int {
        guard let n = Int(value), n >= 0 else { throw .queryParseError("Invalid value for integer: \"\(value)\"") }
        return n
    }

    /// A negative limit is no limit, as in CouchDB (its countdown never reaches zero).
    private static func limit(_ value: String) throws(CouchError) -> Int? {
        guard let n = Int(value) else { throw .queryParseError("Invalid value for integer: \"\(value)\"") }
        return n < 0 ? nil : n
    }

    private static func heartbeat(_ value: String) throws(CouchError) -> Duration? {
        if value == "true" { return .seconds(60) }
        guard let ms = Int(value) else {
            throw .badRequest("Invalid heartbeat value. Expecting a positive integer value (in milliseconds).")
        }
        guard ms > 0 else { throw .badRequest("The heartbeat value should be a positive integer (in milliseconds).") }
        return .milliseconds(ms)
    }

    /// `couch_changes:configure_filter`: the built-in filters, and for `ddoc/name` the same lookups CouchDB makes
    /// (404 `missing` for no design document, 404 `missing json key: …` for no such function).
    private static func filter(
        _ name: String?, _ request: Request, _ database: Database, body: JSONObject?, regexMemory: RegexMemory
    ) throws -> Filter {
        guard let name, !name.isEmpty else { return .none }
        switch name {
        case "_doc_ids":
            let ids = request.verb == .POST ? body?["doc_ids"] : try request.query.json("doc_ids")
            guard let array = ids?.arrayValue, array.allSatisfy({ $0.stringValue != nil }) else {
                throw CouchError.badRequest("`doc_ids` filter parameter is not a list of doc ids.")
            }
            return .docIDs(Set(array.compactMap(\.stringValue)))
        case "_selector":
            guard request.verb == .POST else {
                throw CouchError.badRequest("Selector must be specified in POST payload")
            }
            guard let selectorJSON = body?["selector"], case .object = selectorJSON else {
                throw CouchError.badRequest("Selector error: expected a JSON object")
            }
            do {
                return .selector(try Selector(selectorJSON, regexMemory: regexMemory))
            } catch {
                if error.status == 503 { throw CouchError.serviceUnavailable(error.reason) }
                throw CouchError.badRequest(error.reason)
            }
        case "_design":
            return .design
        case "_view":
            guard let view = request.query["view"], !view.isEmpty else {
                throw CouchError.badRequest("`view` filter parameter is not provided.")
            }
            let parts = view.split(separator: "/")
            guard parts.count == 2 else {
                throw CouchError.badRequest("`view` must be of the form `designname/viewname`")
            }
            try requireFunction(database, design: parts[0], member: "views", name: parts[1])
            let group = try ViewGroup.load(database, design: String(parts[0]))
            guard let (number, _) = group.view(named: String(parts[1])) else {
                throw CouchError.notFound("missing json key: map")
            }
            return .view(group, number)
        default:
            if name.hasBytePrefix("_") { throw CouchError.badRequest("unknown builtin filter name") }
            let parts = name.split(separator: "/")
            if parts.isEmpty { return .none }
            guard parts.count == 2 else {
                throw CouchError.badRequest("`filter` must be of the form `designname/filtername`")
            }
            let ddoc = try requireFunction(database, design: parts[0], member: "filters", name: parts[1])
            return .function(ddoc, name: String(parts[1]))
        }
    }

    /// 404 unless `_design/<design>` exists with `<member>.<name>` (`couch_util:get_nested_json_value`).
    @discardableResult
    static func requireFunction(_ database: Database, design: Substring, member: String, name: Substring)
        throws -> DesignDocument
    {
        guard let ddoc = try DesignFunctionCache.designDocument(database, "_design/" + design) else {
            throw CouchError.notFound("missing")
        }
        guard let functions = ddoc.body[member] else { throw CouchError.notFound("missing json key: \(member)") }
        guard functions[String(name)] != nil else { throw CouchError.notFound("missing json key: \(name)") }
        return ddoc
    }
}
