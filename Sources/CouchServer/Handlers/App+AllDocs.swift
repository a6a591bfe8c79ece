import CouchWire
import RevTree

/// `GET/POST /db/_all_docs`.
extension App {
    func allDocs(_ database: Database, _ request: Request, _ reply: Reply) throws {
        try require(request, "GET", "HEAD", "POST")
        let query = request.query
        var keys: [JSON]?
        if let keysParam = try query.json("keys") {
            guard let array = keysParam.arrayValue else { throw CouchError.badRequest("`keys` must be an array") }
            keys = array
        }
        if request.method == "POST" {
            try requireJSONContent(request)
            let body = try request.jsonObjectBody(limit: Limits.bulkRequestBytes)
            if let bodyKeys = body["keys"] {
                guard let array = bodyKeys.arrayValue else {
                    throw CouchError.badRequest("`keys` body member must be an array.")
                }
                keys = array
            }
        }
        var range = try KeyRange(query)
        let includeDocs = try query.bool("include_docs")
        var options = RenderOptions()
        options.conflicts = try query.bool("conflicts")
        options.attachments = try query.bool("attachments")
        let skip = try query.int("skip") ?? 0
        let limit = try query.int("limit")
        let wantUpdateSeq = try query.bool("update_seq")
        let info = try database.info()

        var rows: [JSON] = []
        let inline = InlineAttachments(self, database)
        func row(_ doc: DocumentInfo) throws -> JSON {
            var value = JSONObject()
            value["rev"] = .string(doc.winner.description)
            if doc.deleted { value["deleted"] = true }
            var out = JSONObject()
            out["id"] = .string(doc.id)
            out["key"] = .string(doc.id)
            out["value"] = .object(value)
            if includeDocs {
                if doc.deleted {
                    out["doc"] = .null
                } else if let revision = try database.revision(doc.id, rev: nil) {
                    let renderer = DocumentRenderer(id: doc.id, info: doc, options: options, inline: inline)
                    out["doc"] = .object(try renderer.render(revision))
                }
            }
            return .object(out)
        }

        var offset: JSON = .null
        if let keys {
            var ordered = keys
            if range.descending { ordered.reverse() }
            for key in ordered.dropFirst(skip).prefix(limit ?? Int.max) {
                guard let id = key.stringValue, let doc = try database.document(id) else {
                    rows.append(["key": key, "error": "not_found"])
                    continue
                }
                rows.append(try row(doc))
            }
        } else {
            if range.descending, range.startKey == nil, range.endKey == nil {
                range = KeyRange(descending: true)
            }
            let before =
                try range.startKey.map { try database.liveDocumentCount(before: $0, descending: range.descending) } ?? 0
            offset = .number(JSONNumber(min(before + skip, info.docCount)))
            // Collected first, rendered after: `include_docs` reads must not nest inside this read.
            var docs: [DocumentInfo] = []
            try database.allDocs(
                startKey: range.startKey, endKey: range.endKey, inclusiveEnd: range.inclusiveEnd,
                descending: range.descending, skip: skip, limit: limit
            ) { doc in
                docs.append(doc)
                return true
            }
            for doc in docs { rows.append(try row(doc)) }
        }
        var out = JSONObject()
        out["total_rows"] = .number(JSONNumber(info.docCount))
        out["offset"] = offset
        if wantUpdateSeq { out["update_seq"] = Seq.json(info.updateSeq) }
        out["rows"] = .array(rows)
        try replyJSON(.object(out), inline: inline, reply)
    }
}
