import CouchWire
import Foundation
import Synchronization

/// One batch: `_revs_diff`, then fetching and writing what the target is missing.
extension Replication {
    /// A missing document: its revisions and the target's possible ancestors (for `atts_since`).
    struct Missing {
        let id: String
        var revs: [String]
        var ancestors: [String]
    }

    func replicate(_ rows: [ChangeRow]) throws(ReplicationError) {
        var order: [String] = []
        var revsByID: [String: [String]] = [:]
        for row in rows {
            if revsByID[row.id] == nil { order.append(row.id) }
            revsByID[row.id, default: []].append(contentsOf: row.revs)
        }
        let query = JSON.object(JSONObject(order.map { ($0, .array((revsByID[$0] ?? []).map(JSON.string))) }))
        let diff = try expect(
            try call(target, target.request("POST", "/_revs_diff", json: query)), target, [200], "_revs_diff",
            limit: ReplyLimit.revsDiff)
        var missing: [Missing] = []
        for id in order {
            // An id left out is one the target has; one listed must say which revisions it lacks.
            guard let entry = diff[id] else { continue }
            guard case .object = entry, let listed = entry["missing"]?.arrayValue else {
                throw Self.wrongShape(target, "_revs_diff for \(id)", entry, "an object with a missing array")
            }
            let revs = listed.compactMap(\.stringValue)
            guard !revs.isEmpty else { continue }
            let ancestors = entry["possible_ancestors"]?.arrayValue?.compactMap(\.stringValue) ?? []
            missing.append(Missing(id: id, revs: revs, ancestors: ancestors))
        }
        let checked = revsByID.values.reduce(0) { $0 + $1.count }
        let found = missing.reduce(0) { $0 + $1.revs.count }
        update {
            $0.missingChecked += checked
            $0.missingFound += found
        }
        guard !missing.isEmpty else { return }
        var plain: [JSON] = []
        var refetch: [Missing] = []
        if bulkGetEnabled, let fetched = try bulkGet(missing) {
            var served = Set<String>()
            for (item, docs) in fetched {
                for doc in docs {
                    let rev = doc["_rev"]?.stringValue ?? ""
                    served.insert(item.id + "\u{0}" + rev)
                    if doc["_attachments"] != nil {
                        refetch.append(Missing(id: item.id, revs: [rev], ancestors: item.ancestors))
                    } else {
                        plain.append(doc)
                    }
                }
            }
            // Revisions `_bulk_get` answered with an error are read one by one, as CouchDB's worker does.
            for item in missing {
                let unserved = item.revs.filter { !served.contains(item.id + "\u{0}" + $0) }
                if !unserved.isEmpty { refetch.append(Missing(id: item.id, revs: unserved, ancestors: item.ancestors)) }
            }
            // Documents with attachments are read again below, and counted there.
            update { [count = plain.count] in $0.docsRead += count }
        } else {
            refetch = missing
        }
        var singles: [JSON] = []
        try transferAll(refetch, plainDocs: &plain, singleDocs: &singles)
        try write(plain: plain, singles: singles)
    }

    /// Writes what was fetched: `_bulk_docs` for plain documents, one `PUT` each for design documents
    /// (validated one by one, as CouchDB's replicator sends them) and documents with stubs. A stub the
    /// target cannot resolve (412) makes the document travel again with all its attachments.
    private func write(plain: [JSON], singles: [JSON]) throws(ReplicationError) {
        let isDesign: (JSON) -> Bool = { $0["_id"]?.stringValue?.hasPrefix("_design/") == true }
        try bulkDocs(plain.filter { !isDesign($0) })
        for doc in plain.filter(isDesign) + singles where try !putJSON(doc) {
            guard let id = doc["_id"]?.stringValue, let rev = doc["_rev"]?.stringValue else { continue }
            var again: [JSON] = []
            var againSingles: [JSON] = []
            try transferOpenRevs(
                Missing(id: id, revs: [rev], ancestors: []), plainDocs: &again, singleDocs: &againSingles)
            try bulkDocs(again.filter { !isDesign($0) })
            for retry in again.filter(isDesign) + againSingles where try !putJSON(retry) {
                recordWrites(written: 0, failed: 1)
            }
        }
    }

    /// Runs `transferOpenRevs` for every item on up to `options.connections` threads (documents with
    /// attachments are independent; each worker uses its own pooled connections).
    private func transferAll(_ items: [Missing], plainDocs: inout [JSON], singleDocs: inout [JSON])
        throws(ReplicationError)
    {
        let workers = min(options.connections, items.count)
        if workers <= 1 {
            for item in items { try transferOpenRevs(item, plainDocs: &plainDocs, singleDocs: &singleDocs) }
            return
        }
        let queue = Mutex<(next: Int, plain: [JSON], singles: [JSON], error: ReplicationError?)>(
            (0, [], [], nil))
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            let thread = Thread { [self] in
                defer { group.leave() }
                while true {
                    let index: Int? = queue.withLock { state in
                        guard state.error == nil, state.next < items.count else { return nil }
                        state.next += 1
                        return state.next - 1
                    }
                    guard let index else { return }
                    var plain: [JSON] = []
                    var singles: [JSON] = []
                    let outcome = Result { () throws(ReplicationError) in
                        try transferOpenRevs(items[index], plainDocs: &plain, singleDocs: &singles)
                    }
                    if case .failure(let error) = outcome {
                        queue.withLock { if $0.error == nil { $0.error = error } }
                        return
                    }
                    queue.withLock {
                        $0.plain += plain
                        $0.singles += singles
                    }
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        let (_, plain, singles, error) = queue.withLock { $0 }
        if let error { throw error }
        plainDocs += plain
        singleDocs += singles
    }

    /// `POST /_bulk_get?latest=true&revs=true&attachments=false`.
    /// - Returns: nil when the source has no `_bulk_get` (it is not asked again); else each request's docs.
    func bulkGet(_ missing: [Missing]) throws(ReplicationError) -> [(Missing, [JSON])]? {
        var docs: [JSON] = []
        for item in missing {
            for rev in item.revs {
                docs.append(
                    .object(
                        JSONObject([
                            ("id", .string(item.id)), ("rev", .string(rev)),
                            ("atts_since", .array(item.ancestors.map(JSON.string))),
                        ])))
            }
        }
        let body = JSON.object(JSONObject([("docs", .array(docs))]))
        let response = try call(
            source, source.request("POST", "/_bulk_get?latest=true&revs=true&attachments=false", json: body))
        if [400, 404, 405, 501].contains(response.status) {
            response.discard()
            bulkGetEnabled = false
            return nil
        }
        let reply = try expect(response, source, [200], "_bulk_get", limit: ReplyLimit.documents)
        guard let results = reply["results"]?.arrayValue else {
            throw Self.wrongShape(source, "_bulk_get", reply["results"] ?? .null, "an object with a results array")
        }
        var byID: [String: Missing] = [:]
        for item in missing { byID[item.id] = item }
        var out: [(Missing, [JSON])] = []
        var fetched = 0
        for result in results {
            guard let id = result["id"]?.stringValue, let item = byID[id] else { continue }
            let ok = (result["docs"]?.arrayValue ?? []).compactMap { $0["ok"] }
            fetched += ok.count
            out.append((item, ok))
        }
        update {
            $0.bulkGetAttempts += docs.count
            $0.bulkGetDocs += fetched
        }
        return out
    }

    /// `POST /_bulk_docs` with `new_edits=false`; error rows (401/403 and the like) count as
    /// `doc_write_failures`, as in CouchDB. A 413 splits the batch in half.
    func bulkDocs(_ docs: [JSON]) throws(ReplicationError) {
        guard !docs.isEmpty else { return }
        let body = JSON.object(JSONObject([("new_edits", false), ("docs", .array(docs))]))
        var request = target.request("POST", "/_bulk_docs", json: body)
        request.headers.add("X-Couch-Full-Commit", "false")
        let response = try call(target, request)
        if response.status == 413 && docs.count > 1 {
            response.discard()
            let half = docs.count / 2
            try bulkDocs(Array(docs[..<half]))
            try bulkDocs(Array(docs[half...]))
            return
        }
        // A cluster answers 202 when fewer than its write quorum of copies took the batch (a node is down):
        // the revisions are stored and internal replication copies them, so they count as written.
        let reply = try expect(
            response, target, [201, 202, 417], "_bulk_docs", limit: ReplyLimit.revsDiff,
            shape: response.status == 417 ? .any : .array)
        let failures = (reply.arrayValue ?? []).filter { $0["error"] != nil }.count
        recordWrites(written: docs.count - failures, failed: failures)
    }

    func recordWrites(written: Int, failed: Int) {
        shared.withLock {
            $0.docsSinceCheckpoint += written + failed
            if written > 0 { $0.wroteAnything = true }
            $0.stats.docsWritten += written
            $0.stats.docWriteFailures += failed
            $0.updatedOn = Date()
        }
    }

    /// `PUT /db/doc?new_edits=false` with a JSON body (design documents; stubs the target resolves).
    /// - Returns: false when the target answered 412 (a stub it cannot resolve: send the attachments).
    func putJSON(_ doc: JSON) throws(ReplicationError) -> Bool {
        guard let id = doc["_id"]?.stringValue else { return true }
        let response = try call(
            target, target.request("PUT", "/" + PathEncoding.docID(id) + "?new_edits=false", json: doc))
        if response.status == 412 && doc["_attachments"] != nil {
            response.discard()
            return false
        }
        try judgeWrite(response, id: id)
        return true
    }

    /// A single document write's answer: 401/403/413/415 skip the document (a failure), anything else
    /// unexpected stops the replication.
    func judgeWrite(_ response: ClientResponse, id: String) throws(ReplicationError) {
        switch response.status {
        case 200, 201, 202:
            response.discard()
            recordWrites(written: 1, failed: 0)
        case 401, 403, 413, 415:
            if response.status == 401, id.isEmpty { throw .unauthorized(target.display) }
            response.discard()
            recordWrites(written: 0, failed: 1)
        default:
            _ = try expect(response, target, [], "PUT /\(id)")
        }
    }
}
