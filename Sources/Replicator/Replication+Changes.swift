import CouchWire

/// Reading the source's `_changes` in batches.
extension Replication {
    struct ChangeRow {
        let id: String
        let seq: JSON
        let revs: [String]
    }

    struct ChangeBatch {
        var rows: [ChangeRow]
        var lastSeq: JSON?
        var pending: Int?
    }

    /// One batch of `_changes?style=all_docs` after `since`: `feed=normal`, or a long-poll that waits for
    /// the next change once a continuous replication has caught up. `doc_ids` and a selector are sent as
    /// CouchDB's replicator sends them (`POST` with `filter=_doc_ids` / `filter=_selector`).
    func changes(since: JSON, longpoll: Bool) throws(ReplicationError) -> ChangeBatch {
        let sinceText = since.stringValue ?? since.serializedString
        var query = "feed=\(longpoll ? "longpoll" : "normal")&style=all_docs&since=\(PathEncoding.query(sinceText))"
        query += "&limit=\(options.batchSize)&timeout=10000"
        var body: JSON?
        if let docIDs = options.docIDs {
            query += "&filter=_doc_ids"
            body = .object(JSONObject([("doc_ids", .array(docIDs.map(JSON.string)))]))
        } else if let selector = options.selector {
            query += "&filter=_selector"
            body = .object(JSONObject([("selector", selector)]))
        }
        if let filter = options.filter, options.docIDs == nil, options.selector == nil {
            // As CouchDB's replicator: the filter's name and each query parameter in the URL of a GET.
            query += "&filter=" + PathEncoding.query(filter)
            for (name, value) in options.queryParams ?? JSONObject() {
                query +=
                    "&" + PathEncoding.query(name) + "="
                    + PathEncoding.query(value.stringValue ?? value.serializedString)
            }
        }
        let request = source.request(
            body == nil ? "GET" : "POST", "/_changes?" + query, json: body,
            timeout: ClientRequest.peerTimeout + .seconds(10))
        let reply = try expect(try call(source, request), source, [200], "_changes", limit: ReplyLimit.changes)
        guard let results = reply["results"]?.arrayValue else {
            throw Self.wrongShape(source, "_changes", reply["results"] ?? .null, "an object with a results array")
        }
        var batch = ChangeBatch(rows: [], lastSeq: reply["last_seq"], pending: reply["pending"]?.intValue)
        for row in results {
            guard let id = row["id"]?.stringValue, !id.hasPrefix("_local/") else { continue }
            let revs = (row["changes"]?.arrayValue ?? []).compactMap { $0["rev"]?.stringValue }
            batch.rows.append(ChangeRow(id: id, seq: row["seq"] ?? .null, revs: revs))
        }
        if batch.lastSeq == nil || batch.lastSeq?.isNull == true, let last = batch.rows.last?.seq, !last.isNull {
            batch.lastSeq = last
        }
        return batch
    }
}
