import CouchServer
import CouchStore
import CouchWire
import Foundation
import MediaDecoding
import RevTree
import Synchronization

/// A database's photos in the order they were taken, newest first: one entry per live document (design
/// documents aside), kept per database and brought up to date from `_changes` at each listing.
final class PhotoTimeline: Sendable {
    struct Entry: Sendable {
        var id: String
        var seq: Int
        /// Seconds since 1970 (`-infinity` when nothing says when: listed last).
        var taken: Double

        /// Newest first; the later update first among photos taken at the same moment.
        static func precedes(_ a: Entry, _ b: Entry) -> Bool {
            a.taken != b.taken ? a.taken > b.taken : a.seq > b.seq
        }
    }

    private struct State {
        /// The database these entries are of: one deleted and created again under its name starts afresh.
        var uuid = ""
        var seq = 0
        var byID: [String: Entry] = [:]
        var sorted: [Entry] = []
    }

    private let state = Mutex(State())
    /// One update at a time per database, so two listings do not probe the same new files twice.
    private let updating = NSLock()

    /// The entries up to date with `database`, `entry` computing a changed document's (nil: not listed).
    func entries(_ database: Database, entry: @Sendable (ChangeRow) throws -> Entry?) throws -> [Entry] {
        updating.lock()
        defer { updating.unlock() }
        let since = state.withLock { state in
            if state.uuid != database.uuid { state = State(uuid: database.uuid) }
            return state.seq
        }
        var collected: [ChangeRow] = []
        try database.changes(since: since, limit: nil, descending: false) { row in
            collected.append(row)
            return true
        }
        let rows = collected
        guard !rows.isEmpty else { return state.withLock { $0.sorted } }
        // Probing new files is the slow part (a worker round trip each): as many at once as there are cores.
        let computed = Mutex([Entry?](repeating: nil, count: rows.count))
        let failure = Mutex<(any Error)?>(nil)
        DispatchQueue.concurrentPerform(iterations: rows.count) { index in
            do {
                let made = try entry(rows[index])
                computed.withLock { $0[index] = made }
            } catch {
                failure.withLock { $0 = error }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
        let made = computed.withLock { $0 }
        return state.withLock { state in
            for (row, entry) in zip(rows, made) {
                state.byID[row.id] = entry
                state.seq = max(state.seq, row.seq)
            }
            state.sorted = state.byID.values.sorted(by: Entry.precedes)
            return state.sorted
        }
    }
}

/// One listed document's facts: its media attachment, what the media sandbox read of it, and when it was taken.
struct PhotoFacts {
    var media: AttachmentInfo?
    var info: MediaInfo?
    /// ISO 8601: the camera's time with its offset when known, else the document's (the file's or push's) in UTC.
    var taken: String?
    var takenSeconds: Double?
    /// A Live Photo's video half: a QuickTime or MP4 attachment beside the still in the same document.
    var liveVideo: String?
}

extension GalleryHandlers {
    /// `GET …/photos?before=CURSOR&limit=N`: live documents by when they were taken, newest first, a page at a
    /// time; `next` is the `before` of the next page, `update_seq` where a `_changes` feed picks up.
    func galleryPhotos(_ database: Database, _ request: Request) throws -> Response {
        let limit = min(max(try request.query.int("limit") ?? 60, 1), 500)
        let before = try request.query["before"].map(Self.parseCursor)
        let updateSeq = database.updateSeq
        let entries = try state.timeline(database.name).entries(database) { row in
            guard !row.deleted, !row.id.hasBytePrefix("_design/"),
                let revision = try database.revision(row.id, rev: nil), !revision.deleted
            else { return nil }
            let facts = try photoFacts(database, revision)
            return PhotoTimeline.Entry(id: row.id, seq: row.seq, taken: facts.takenSeconds ?? -.infinity)
        }
        var start = 0
        if let before {
            start = entries.firstIndex { PhotoTimeline.Entry.precedes(before, $0) } ?? entries.count
        }
        let page = entries[start..<min(entries.count, start + limit)]
        let admin = security.security(of: database.name).isAdmin(request.user)
        var rows: [JSON] = []
        for entry in page {
            if let item = try galleryItem(database, entry.id, seq: entry.seq, admin: admin) { rows.append(item) }
        }
        let more = start + page.count < entries.count
        return .json(
            .ok,
            [
                "rows": .array(rows), "next": more ? page.last.map { .string(Self.cursor($0)) } ?? .null : .null,
                "update_seq": .int(updateSeq),
            ])
    }

    /// A page boundary: the last entry's time (milliseconds) and sequence, `1715515391000_42`.
    static func cursor(_ entry: PhotoTimeline.Entry) -> String {
        let millis = entry.taken.isFinite ? String(Int64(entry.taken * 1000)) : "none"
        return millis + "_" + String(entry.seq)
    }

    static func parseCursor(_ text: String) throws -> PhotoTimeline.Entry {
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 2, let seq = Int(parts[1]) else {
            throw CouchError.badRequest("before must be the next of an earlier page")
        }
        if parts[0] == "none" { return PhotoTimeline.Entry(id: "", seq: seq, taken: -.infinity) }
        guard let millis = Int64(parts[0]) else {
            throw CouchError.badRequest("before must be the next of an earlier page")
        }
        return PhotoTimeline.Entry(id: "", seq: seq, taken: Double(millis) / 1000)
    }

    /// One document as the grid shows it: its fields and attachments, and `taken`, `kind`, `width`, `height`,
    /// `duration`, `camera`, `live` from its media; `gps` only for the database's admins (location is private).
    func galleryItem(_ database: Database, _ id: String, seq: Int, admin: Bool) throws -> JSON? {
        guard let revision = try database.revision(id, rev: nil), !revision.deleted else { return nil }
        let fields = (try? JSON.parse(revision.body ?? Array("{}".utf8))) ?? .object(JSONObject())
        let attachments: [JSON] = revision.attachments.map { att in
            [
                "name": .string(att.name), "content_type": .string(att.contentType), "length": .int(att.length),
                "digest": .string(att.digest),
            ]
        }
        let facts = try photoFacts(database, revision)
        let info = facts.info
        let kind =
            info?.kind.rawValue
            ?? (facts.media?.contentType.lowercased().hasPrefix("video/") == true
                ? "video" : "photo")
        var camera = JSONObject()
        if let make = info?.make { camera["make"] = .string(make) }
        if let model = info?.model { camera["model"] = .string(model) }
        var gps = JSON.null
        if admin, let latitude = info?.latitude, let longitude = info?.longitude {
            gps = ["latitude": Self.number(latitude), "longitude": Self.number(longitude)]
        }
        return [
            "id": .string(id), "rev": .string(revision.rev.description), "seq": .int(seq), "fields": fields,
            "attachments": .array(attachments), "taken": facts.taken.map(JSON.string) ?? .null,
            "kind": .string(kind), "width": info?.width.map(JSON.int) ?? .null,
            "height": info?.height.map(JSON.int) ?? .null,
            "duration": info?.duration.map(Self.number) ?? .null,
            "camera": camera.isEmpty ? .null : .object(camera), "gps": gps,
            "live": facts.liveVideo.map(JSON.string) ?? .null,
        ]
    }

    private static func number(_ value: Double) -> JSON { JSONNumber(value).map(JSON.number) ?? .null }

    /// What a document's media says, probed by the media sandbox once per content digest.
    func photoFacts(_ database: Database, _ revision: StoredRevision) throws -> PhotoFacts {
        var facts = PhotoFacts()
        let readable = revision.attachments.filter { $0.encoding == nil }
        let isVideo = { (att: AttachmentInfo) in att.contentType.lowercased().hasPrefix("video/") }
        let isImage = { (att: AttachmentInfo) in att.contentType.lowercased().hasPrefix("image/") }
        facts.media = readable.first(where: isImage) ?? readable.first(where: isVideo) ?? readable.first
        if let media = facts.media, isImage(media) {
            facts.liveVideo = readable.first(where: isVideo)?.name
        }
        if let media = facts.media {
            facts.info = try state.catalog.info(key: media.blobKey) { try blobPath(database, media.blobKey) }
        }
        if let info = facts.info, let seconds = info.takenSeconds {
            facts.taken = info.takenISO
            facts.takenSeconds = seconds
        } else if let body = revision.body, let fields = (try? JSON.parse(body))?.objectValue,
            let seconds = PhotoTimestamp.seconds(in: fields)
        {
            facts.takenSeconds = seconds
            // The document's own text when it is a date (`couchlite push` writes the camera's, with its offset:
            // the timeline's day is the camera's), else the moment in UTC.
            let written = fields["taken"]?.stringValue.flatMap { PhotoTimestamp.parse($0) == seconds ? $0 : nil }
            facts.taken = written ?? ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds))
        }
        return facts
    }

    /// Where an attachment's bytes are on disk (a missing blob is an error, never a file to remember as bad).
    func blobPath(_ database: Database, _ key: String) throws -> String {
        let store = try blobs.store(for: database)
        guard store.exists(key) else { throw CouchError.notFound("missing") }
        return store.directory + "/" + key.prefix(2) + "/" + key
    }
}
