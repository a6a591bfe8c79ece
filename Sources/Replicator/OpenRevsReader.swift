import CouchWire

/// Reads a `GET /db/doc?open_revs=[…]` reply one revision at a time, as it streams in.
///
/// The reply is `multipart/mixed` (CouchDB, couchlite): each part is a revision as plain
/// `application/json`, a nested `multipart/related` (the JSON, then one part per attachment whose
/// bytes follow), or `application/json; error="true"` for a revision the source does not have. A
/// source that ignores `Accept` may answer a JSON array of `{"ok":doc}`/`{"missing":rev}` instead;
/// both are read here. Attachment bytes are handed on in pieces, never collected.
final class OpenRevsReader {
    enum Item {
        /// A revision with no attachment bytes following (stubs or inline `data` only).
        case document(JSON)
        /// A revision whose attachments follow: read them with `nextAttachment` and `readAttachment`.
        case related(JSON)
        case missing(String)
    }

    private let response: ClientResponse
    private var outer: MultipartParser?
    private var outerEvents: [MultipartEvent] = []
    private var outerDone = false
    private var inner: MultipartParser?
    private var innerEvents: [MultipartEvent] = []
    private var innerPartEnded = false
    private var jsonItems: [Item] = []
    static let jsonLimit = 64 << 20

    init(_ response: ClientResponse) throws(ReplicationError) {
        self.response = response
        if response.mediaType == "application/json" {
            guard case .array(let rows) = try response.json() else {
                throw .protocolError("open_revs reply is not an array")
            }
            for row in rows {
                if let doc = row["ok"] {
                    jsonItems.append(.document(doc))
                } else if let rev = row["missing"]?.stringValue {
                    jsonItems.append(.missing(rev))
                }
            }
            outerDone = true
            return
        }
        do {
            let (media, boundary) = try MultipartBoundary.parse(contentType: response.headers["Content-Type"] ?? "")
            guard media == "multipart/mixed" else { throw MultipartError.truncated }
            outer = MultipartParser(boundary: boundary)
        } catch {
            throw .protocolError("open_revs reply is neither multipart/mixed nor JSON")
        }
    }

    /// The next revision, or nil at the end of the reply.
    func next() throws(ReplicationError) -> Item? {
        if outer == nil { return jsonItems.isEmpty ? nil : jsonItems.removeFirst() }
        // Skip to the next part.
        while true {
            guard let event = try nextOuter() else { return nil }
            guard case .partBegin(let headers) = event else { continue }
            let contentType = headers.first { $0.0.lowercased() == "content-type" }?.1 ?? "application/json"
            let lower = contentType.lowercased()
            if lower.hasPrefix("multipart/related") {
                do {
                    inner = MultipartParser(boundary: try MultipartBoundary.parse(contentType: contentType).boundary)
                } catch {
                    throw .protocolError("bad multipart/related boundary in open_revs reply")
                }
                innerEvents = []
                innerPartEnded = false
                // The first inner part is the JSON.
                guard try nextAttachmentHeaders() != nil else { throw .protocolError("empty multipart/related part") }
                var json: [UInt8] = []
                while let chunk = try readAttachment() {
                    json.append(contentsOf: chunk)
                    if json.count > Self.jsonLimit { throw .protocolError("document JSON too large") }
                }
                return .related(try parse(json))
            }
            var body: [UInt8] = []
            while let event = try nextOuter() {
                if case .bodyChunk(let bytes) = event { body.append(contentsOf: bytes) }
                if case .partEnd = event { break }
                if body.count > Self.jsonLimit { throw .protocolError("document JSON too large") }
            }
            let json = try parse(body)
            if lower.contains("error") { return .missing(json["missing"]?.stringValue ?? "") }
            return .document(json)
        }
    }

    /// Moves to the next attachment part of the current `.related` revision.
    /// - Returns: its part headers, or nil when no attachment is left (the revision is complete).
    func nextAttachmentHeaders() throws(ReplicationError) -> [(String, String)]? {
        while true {
            guard let event = try nextInner() else { return nil }
            switch event {
            case .partBegin(let headers): return headers
            case .end:
                // Whatever follows the closing delimiter up to the end of the outer part is epilogue.
                while try nextInner() != nil {}
                inner = nil
                return nil
            default: continue
            }
        }
    }

    /// The next bytes of the current attachment part, nil at its end.
    func readAttachment() throws(ReplicationError) -> [UInt8]? {
        while true {
            guard let event = try nextInner() else { throw .protocolError("attachment part ended early") }
            switch event {
            case .bodyChunk(let bytes): return bytes
            case .partEnd: return nil
            default: throw .protocolError("unexpected multipart event in attachment part")
            }
        }
    }

    private func parse(_ bytes: [UInt8]) throws(ReplicationError) -> JSON {
        do {
            return try JSON.parse(bytes, memoryBudget: JSON.memoryBudget(forInput: bytes.count))
        } catch {
            throw .protocolError("open_revs part is not JSON")
        }
    }

    private func nextOuter() throws(ReplicationError) -> MultipartEvent? {
        while outerEvents.isEmpty {
            if outerDone { return nil }
            let chunk = try response.readChunk()
            do {
                if let chunk {
                    outerEvents = try outer?.parse(chunk) ?? []
                } else {
                    try outer?.finish()
                    outerDone = true
                }
            } catch {
                throw .protocolError("malformed multipart open_revs reply: \(error)")
            }
        }
        let event = outerEvents.removeFirst()
        if case .end = event { outerDone = true }
        return event
    }

    private func nextInner() throws(ReplicationError) -> MultipartEvent? {
        while innerEvents.isEmpty {
            if innerPartEnded { return nil }
            guard let event = try nextOuter() else { throw .protocolError("open_revs reply ended early") }
            do {
                switch event {
                case .bodyChunk(let bytes): innerEvents = try inner?.parse(bytes) ?? []
                case .partEnd:
                    try inner?.finish()
                    innerPartEnded = true
                default: throw MultipartError.truncated
                }
            } catch let error as ReplicationError {
                throw error
            } catch {
                throw .protocolError("malformed multipart/related part: \(error)")
            }
        }
        return innerEvents.removeFirst()
    }
}
