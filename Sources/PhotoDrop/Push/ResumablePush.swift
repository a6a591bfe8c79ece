import CouchCrypto
import CouchServer
import CouchWire
import Foundation
import Replicator
import Synchronization

/// Sends the big files of a push through a couchlite receiver's resumable uploads (the gallery's
/// `/_photos/api/db/{db}/uploads`, announced by `GET /` as `vendor.resumable_uploads`) before the replication runs.
/// A connection cut mid-file goes on from the byte the receiver has, after a wait, and so does the next run of the
/// same command (the receiver finds the upload again by its digest). Each file becomes the outbox's very revision
/// on the receiver, so the replication that follows finds it there and sends nothing more for it. A server that
/// does not announce the protocol (CouchDB) gets the plain replication protocol only.
package struct ResumablePush {
    let target: Endpoint
    let outbox: Outbox
    let display: ProgressDisplay
    /// What arrived so far, for the progress display and the line a Ctrl-C prints; its `interrupted` stops sending.
    let tally: PushTally

    /// Smaller files go with the replication: sending one again costs little.
    package static let threshold = 4 << 20
    /// Each append sends at most this much, so a drop's chunked-body slice never cuts one short.
    static let pieceBytes = 64 << 20
    static let maxAttempts = 10

    package init(target: Endpoint, outbox: Outbox, display: ProgressDisplay, tally: PushTally = PushTally()) {
        self.target = target
        self.outbox = outbox
        self.display = display
        self.tally = tally
    }

    /// Whether the server `target` is on speaks the protocol (version 1).
    package static func supported(by target: Endpoint) -> Bool {
        var request = target.request("GET", "")
        request.target = split(target).root + "/"
        guard let response = try? target.client.send(request) else { return false }
        let reply = try? response.json(limit: 1 << 16)
        return response.status == 200 && reply?["vendor"]?["resumable_uploads"]?.intValue == 1
    }

    /// The path of the server the endpoint's database is on ("" at the root) and the database's path segment.
    static func split(_ target: Endpoint) -> (root: String, database: String) {
        guard let slash = target.basePath.lastIndex(of: "/") else { return ("", target.basePath) }
        return (String(target.basePath[..<slash]), String(target.basePath[target.basePath.index(after: slash)...]))
    }

    /// Sends each of `photos` at least `threshold` long whose document the receiver lacks (`missing`).
    package func send(_ photos: [PhotoScanner.Photo], missing: Set<String>) throws {
        guard photos.contains(where: { $0.size >= Self.threshold }) else { return }
        // The uploads need the database; the replication would create it only afterwards (412: it is there).
        try target.client.send(target.request("PUT", "")).discard()
        for photo in photos where photo.size >= Self.threshold {
            let sha256 = try PhotoScanner.sha256Hex(photo.path)
            let id = PhotoDocument.id(sha256Hex: sha256)
            guard missing.contains(id) else { continue }
            if tally.interrupted.load(ordering: .relaxed) { throw PushInterrupted() }
            try send(photo, id: id, sha256: sha256)
            tally.finished(size: photo.size)
        }
    }

    private func send(_ photo: PhotoScanner.Photo, id: String, sha256: String) throws {
        let local = try outbox.endpoint.client.send(outbox.endpoint.request("GET", "/" + PathEncoding.docID(id)))
        let doc = try local.json(limit: 1 << 20)
        guard local.status == 200, let rev = doc["_rev"]?.stringValue, case .object(let body) = doc else { return }
        var fields = JSONObject()
        for (key, value) in body where !key.hasPrefix("_") { fields[key] = value }
        var query = "?name=" + Self.encode(photo.name) + "&type=" + Self.encode(photo.contentType)
        query += "&modified=\(Int(photo.modified.timeIntervalSince1970 * 1000))&length=\(photo.size)"
        query += "&sha256=" + sha256 + "&rev=" + Self.encode(rev)
        query += "&fields=" + Self.encode(String(decoding: JSON.object(fields).serialized(), as: UTF8.self))
        var attempt = 0
        while true {
            do {
                let (upload, offset) = try create(query)
                try Self.check(offset, of: photo)
                tally.starting(photo.relative, at: offset)
                if offset > 0 { display.message("push: \(photo.relative) resumes at byte \(offset) of \(photo.size)") }
                try append(photo, upload: upload, from: offset)
                return
            } catch let error as ReplicationError {
                if tally.interrupted.load(ordering: .relaxed) { throw PushInterrupted() }
                // A lost connection or a busy receiver: wait, then ask it where to go on.
                attempt += 1
                guard attempt < Self.maxAttempts else { throw error }
                display.message("push: \(photo.relative): \(error.description); retrying")
                Thread.sleep(forTimeInterval: min(30, Double(1 << min(attempt, 5)) / 2))
            }
        }
    }

    /// Starts the upload, or finds the receiver's own from an earlier attempt: its id and offset.
    private func create(_ query: String) throws -> (String, Int) {
        var request = target.request("POST", "")
        request.target = uploadsPath + query
        let response = try target.client.send(request)
        let reply = (try? response.json(limit: 1 << 16)) ?? .null
        guard response.status == 200 || response.status == 201, let id = reply["id"]?.stringValue,
            let offset = reply["offset"]?.intValue
        else { throw Self.refusal(response.status, reply) }
        return (id, offset)
    }

    /// Appends the file from `offset`, a piece at a time, until the receiver has made it the photo (an empty
    /// append completes one whose bytes all arrived in an attempt that ended before its answer).
    private func append(_ photo: PhotoScanner.Photo, upload: String, from offset: Int) throws {
        var offset = offset
        while true {
            let end = min(offset + Self.pieceBytes, photo.size)
            // The peer's progress deadline: a link that stops moving fails the append, which then resumes.
            var request = target.request("PUT", "")
            request.target = uploadsPath + "/" + upload
            request.headers.set("Upload-Offset", String(offset))
            request.headers.set("Content-Type", "application/offset+octet-stream")
            request.body = .stream(Self.piece(photo.path, from: offset, to: end, tally: tally))
            let response = try target.client.send(request)
            let reply = (try? response.json(limit: 1 << 16)) ?? .null
            switch response.status {
            case 201: return
            case 200 where reply["rev"] != nil: return
            case 200, 409:
                guard let next = reply["offset"]?.intValue else { throw Self.refusal(response.status, reply) }
                try Self.check(next, of: photo)
                offset = next
                tally.starting(photo.relative, at: next)
                if response.status == 409 { throw ReplicationError.httpStatus(409, "append at \(offset)") }
            default: throw Self.refusal(response.status, reply)
            }
        }
    }

    /// An offset the receiver answered must lie within the file (a hostile one could name any integer, and the next
    /// piece's end is computed from it).
    static func check(_ offset: Int, of photo: PhotoScanner.Photo) throws {
        guard offset >= 0, offset <= photo.size else {
            throw PushError.local(
                "the receiver answered an upload offset (\(offset)) outside \(photo.relative)'s \(photo.size) bytes")
        }
    }

    /// The bytes `[from, to)` of the file at `path`, streamed, each megabyte counted in `tally` as it goes; a Ctrl-C
    /// ends the piece there (the receiver keeps what it has).
    private static func piece(_ path: String, from: Int, to end: Int, tally: PushTally)
        -> @Sendable (BodyWriter) throws -> Void
    {
        { out in
            guard let handle = FileHandle(forReadingAtPath: path) else { throw PushError.local("cannot read \(path)") }
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(from))
            var sent = from
            while sent < end {
                let chunk = handle.readData(ofLength: min(1 << 20, end - sent))
                if chunk.isEmpty { throw PushError.local("\(path) changed while it was read") }
                if tally.interrupted.load(ordering: .relaxed) { throw PushInterrupted() }
                try chunk.withUnsafeBytes { try out.write($0) }
                sent += chunk.count
                tally.sent(chunk.count)
            }
        }
    }

    private var uploadsPath: String {
        let (root, database) = Self.split(target)
        return root + "/_photos/api/db/" + database + "/uploads"
    }

    /// A refusal that waiting will not change (4xx but 409 and 429) is final; others are retried.
    private static func refusal(_ status: Int, _ reply: JSON) -> any Error {
        let reason = reply["reason"]?.stringValue ?? "HTTP \(status)"
        if status == 507 { return PushError.diskFull(reason) }
        if status >= 400 && status < 500 && status != 409 && status != 429 {
            return PushError.local("the receiver refused the upload: \(reason)")
        }
        return ReplicationError.httpStatus(status, reason)
    }

    private static func encode(_ text: String) -> String { PercentEncoding.encode(text, alsoKeeping: "") }
}
