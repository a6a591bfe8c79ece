import CouchWire

/// One request as the handlers see it: decoded path segments, decoded query parameters, the user it speaks for,
/// and the body still unread (handlers pull it in pieces or whole, with their own size limit).
package struct Request {
    package let head: HTTPRequestHead
    let body: HTTPRequestBody
    /// Who the request speaks for, once authenticated (anonymous until then).
    package var user = UserContext.anonymous
    /// Percent-decoded path segments: `/a%2Fb/doc` → `["a/b", "doc"]`. A trailing slash adds nothing. A `+` is a
    /// space, as CouchDB decodes paths (mochiweb's `unquote`): `/db/a+b` is the document `a b`, `a+b` is `a%2Bb`.
    let segments: [String]
    package let query: QueryParameters
    /// What this request holds of the server's budget for JSON bodies, given back when the request ends.
    let bodyMemory: BodyReservation

    package var method: String { head.method }
    /// The method typed, as the route table knows it (nil for any other: it reaches no handler).
    package let verb: HTTPMethod?

    init(head: HTTPRequestHead, body: HTTPRequestBody, bodyBudget: BodyBudget = .shared) throws(CouchError) {
        self.head = head
        self.verb = HTTPMethod(head.method)
        self.body = body
        self.bodyMemory = BodyReservation(bodyBudget)
        var segments: [String] = []
        for raw in head.path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let decoded = PercentEncoding.decode(raw, plusIsSpace: true) else {
                throw .badRequest("Invalid percent-encoding in URL path")
            }
            segments.append(decoded)
        }
        self.segments = segments
        self.query = try QueryParameters(raw: head.query ?? "")
    }

    /// The media type of the body, lowercased, without parameters.
    var contentType: String? {
        guard let value = head.headers["Content-Type"] else { return nil }
        let media = value.split(separator: ";", maxSplits: 1).first.map(String.init) ?? value
        return media.trimmingSpaces().lowercased()
    }

    /// Reads and parses a JSON body, within the server's budget for bodies being parsed (``BodyBudget``).
    /// - Throws: 413 over `limit` or when the body holds too many small values, 400 `bad_request` for anything
    ///   that is not valid JSON, 503 when the server is busy with other bodies.
    func jsonBody(limit: Int) throws(CouchError) -> JSON {
        let bytes = try readBudgetedBody(limit: limit)
        do {
            return try JSON.parse(bytes, memoryBudget: .requestBody)
        } catch let error where error.kind == .tooLarge {
            throw .tooLarge("The JSON body has too many small values to hold in memory")
        } catch {
            throw .invalidJSON
        }
    }

    /// Reads the whole body after reserving what it and its parse may cost: all of a declared Content-Length at
    /// once, a chunked body as it grows (doubling).
    private func readBudgetedBody(limit: Int) throws(CouchError) -> [UInt8] {
        func http<T>(_ step: () throws(HTTPError) -> T) throws(CouchError) -> T {
            do { return try step() } catch { throw CouchError(error) }
        }
        // Over the limit: 413 from the head, before any reservation. A limit raised past what the machine can
        // hold (`[chttpd] max_http_request_size` = 2^63-1) is held to half its memory: a declared Content-Length
        // is reserved at once, and an allocation that fails traps.
        let limit = min(limit, Limits.heldBodyCeiling)
        try http { () throws(HTTPError) in try body.limit(to: limit) }
        var capacity = body.contentLength ?? min(limit, 64 * 1024)
        try bodyMemory.cover(bodyBytes: capacity)
        var result: [UInt8] = []
        result.reserveCapacity(capacity)
        while true {
            let chunk = try http { () throws(HTTPError) in try body.read(upTo: HTTPLimits.maxReadChunkBytes) }
            if chunk.isEmpty { return result }
            if result.count + chunk.count > capacity {
                capacity = min(limit, max(capacity * 2, result.count + chunk.count))
                try bodyMemory.cover(bodyBytes: capacity)
                result.reserveCapacity(capacity)
            }
            result += chunk
        }
    }

    /// Reads the whole body as bytes within the server's budget for bodies (a show or update function's `req.body`).
    func rawBody(limit: Int) throws(CouchError) -> [UInt8] { try readBudgetedBody(limit: limit) }

    /// CouchDB answers 415 to JSON endpoints given another content type.
    func requireJSONContent() throws(CouchError) {
        if let type = contentType, type != "application/json" {
            throw .badContentType("Content-Type must be application/json")
        }
    }

    /// The JSON object body of a POSTed query (`_view`, `_all_docs`, `_list`), nil for other methods: 415 for
    /// another content type, at most `Limits.bulkRequestBytes`.
    func postedQueryBody() throws(CouchError) -> JSONObject? {
        guard verb == .POST else { return nil }
        try requireJSONContent()
        return try jsonObjectBody(limit: Limits.bulkRequestBytes)
    }

    /// Reads a JSON body that must be an object.
    func jsonObjectBody(limit: Int) throws(CouchError) -> JSONObject {
        guard case .object(let object) = try jsonBody(limit: limit) else {
            throw .badRequest("Request body must be a JSON object")
        }
        return object
    }
}

/// Decoded `name=value` pairs of a query string, in order.
package struct QueryParameters {
    private(set) var pairs: [(name: String, value: String)] = []

    init(raw: String) throws(CouchError) {
        for piece in raw.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentEncoding.decode(parts[0], plusIsSpace: true),
                let value = PercentEncoding.decode(parts.count > 1 ? parts[1] : "", plusIsSpace: true)
            else {
                throw .badRequest("Invalid percent-encoding in query string")
            }
            pairs.append((name, value))
        }
    }

    /// A parameter's text from its JSON form in a body (a view's POST body, a multi-query's query): a string is
    /// its text, anything else its JSON (`true`, `10`).
    static func text(ofDecoded value: JSON) -> String {
        if case .string(let text) = value { return text }
        return value.serializedString
    }

    /// Adds `name=value` after the others (so it is the value `name` has now).
    mutating func append(_ name: String, _ value: String) { pairs.append((name, value)) }

    /// The last value given for `name` (CouchDB takes the last).
    package subscript(name: String) -> String? {
        pairs.last(where: { $0.name == name })?.value
    }

    package func contains(_ name: String) -> Bool { pairs.contains { $0.name == name } }

    /// A boolean parameter: `true`/`false`, else 400 like CouchDB.
    func bool(_ name: String, default defaultValue: Bool = false) throws(CouchError) -> Bool {
        guard let value = self[name] else { return defaultValue }
        switch value {
        case "true": return true
        case "false": return false
        default: throw .queryParseError("Invalid boolean parameter: \"\(value)\"")
        }
    }

    /// A non-negative integer parameter.
    package func int(_ name: String) throws(CouchError) -> Int? {
        guard let value = self[name] else { return nil }
        guard let n = Int(value), n >= 0 else {
            throw .queryParseError("Invalid value for integer: \"\(value)\"")
        }
        return n
    }

    /// A JSON-encoded parameter such as `startkey="a"` or `open_revs=["1-a"]`.
    package func json(_ name: String) throws(CouchError) -> JSON? {
        guard let value = self[name] else { return nil }
        do {
            return try JSON.parse(value)
        } catch {
            throw .badRequest("invalid UTF-8 JSON")
        }
    }
}

extension String {
    func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while scalars.first == " " || scalars.first == "\t" { scalars.removeFirst() }
        while scalars.last == " " || scalars.last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}

extension Request {
    /// Hands the body to `consume` in bounded chunks (`Limits.streamChunk`), so a body of any size is
    /// never held whole. The chunks are lent from one buffer that every read reuses (no allocation per read).
    /// - Throws: 413 `too_large` as soon as more than `limit` bytes have arrived (or are declared),
    ///   the engine's read errors as `CouchError`s, and whatever `consume` throws.
    package func streamBody(limit: Int, tooLarge: String, _ consume: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let length = body.contentLength, length > limit { throw CouchError.tooLarge(tooLarge) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Limits.streamChunk, alignment: 16)
        defer { buffer.deallocate() }
        var total = 0
        while true {
            let count: Int
            do {
                count = try body.read(into: buffer)
            } catch {
                throw CouchError(error)
            }
            if count == 0 { return }
            total += count
            guard total <= limit else { throw CouchError.tooLarge(tooLarge) }
            try consume(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Parses a `multipart/*` body as it streams in, handing each event to `handle`; part bytes are lent
    /// (valid only during the call), not copied.
    /// - Throws: 400 for a bad `Content-Type` boundary or a malformed or truncated body, 413 past `limit`, and
    ///   whatever `handle` throws.
    func streamMultipart(limit: Int, tooLarge: String, _ handle: (MultipartBorrowedEvent) throws -> Void) throws {
        let boundary: [UInt8]
        do {
            boundary = try MultipartBoundary.parse(contentType: head.headers["Content-Type"] ?? "").boundary
        } catch {
            throw CouchError.badRequest("Invalid multipart Content-Type: \(error)")
        }
        var parser = MultipartParser(boundary: boundary)
        try streamBody(limit: limit, tooLarge: tooLarge) { chunk in
            do {
                try parser.parse(borrowing: chunk, handle)
            } catch let error as MultipartError {
                throw CouchError.badRequest("Malformed multipart body: \(error)")
            }
        }
        do {
            try parser.finish()
        } catch {
            throw CouchError.badRequest("Malformed multipart body: \(error)")
        }
    }
}
