import CouchServer
import CouchStore
import CouchWire
import Synchronization

/// What the album list shows of each database: its cover (newest photo), how many photos and videos it holds and
/// the dates they span. Kept incrementally: each album remembers, per document, the little the summary needs and
/// the update sequence it has read to, and a request reads only the changes since (a `DELETE`d and recreated
/// database starts over). A request reads at most `budget` documents in all, so the first look at a huge
/// database is spread over several requests; its summary says `"complete": false` meanwhile.
final class AlbumSummaries: Sendable {
    /// What one document adds to its album.
    struct Entry: Sendable, Equatable {
        enum Kind: Sendable { case photo, video, other }
        let kind: Kind
        /// Seconds since 1970, for ordering; nil when the document says nothing usable.
        let seconds: Double?
        /// The date as the document writes it (`taken`, in the camera's own offset), shown as it is.
        let taken: String?
        let attachment: String
        let digest: String
    }

    /// One database's entries and how far they are read.
    private final class Album: Sendable {
        struct State {
            var seq = 0
            var entries: [String: Entry] = [:]
        }
        let generation: Int
        let state = Mutex(State())
        init(generation: Int) { self.generation = generation }
    }

    static let defaultBudget = 5_000

    private let albums = Mutex([String: Album]())

    /// The summary of `database` (see the type's comment); `budget` is what is left of the request's reads, and
    /// is decreased by what this one read.
    func summary(of database: Database, generation: Int, budget: inout Int) throws -> JSON {
        let album = albums.withLock { albums in
            if let album = albums[database.name], album.generation == generation { return album }
            let album = Album(generation: generation)
            albums[database.name] = album
            return album
        }
        let target = database.updateSeq
        var left = budget
        let complete = try album.state.withLock { state in
            guard state.seq < target else { return true }
            var reached = state.seq
            var more = false
            try database.changes(since: state.seq, limit: nil, descending: false) { row in
                guard left > 0 else {
                    more = true
                    return false
                }
                left -= 1
                reached = row.seq
                state.entries[row.id] =
                    row.deleted || row.id.hasBytePrefix("_design/") ? nil : try Self.entry(database, row.id)
                return true
            }
            state.seq = more ? reached : max(reached, target)
            return !more
        }
        budget = left
        return album.state.withLock { Self.json(database.name, Array($0.entries), complete: complete) }
    }

    /// Forgets albums that no longer exist (so memory follows the databases there are).
    func keep(only names: Set<String>) {
        albums.withLock { albums in albums = albums.filter { names.contains($0.key) } }
    }

    /// What the album list needs of one document, from its current revision.
    static func entry(_ database: Database, _ id: String) throws -> Entry? {
        guard let revision = try database.revision(id, rev: nil), !revision.deleted else { return nil }
        let fields = (try? JSON.parse(revision.body ?? Array("{}".utf8)))?.objectValue ?? JSONObject()
        let name = fields["name"]?.stringValue
        guard let att = revision.attachments.first(where: { $0.name == name }) ?? revision.attachments.first else {
            return nil
        }
        let type = att.contentType.lowercased()
        let kind: Entry.Kind = type.hasPrefix("video/") ? .video : type.hasPrefix("image/") ? .photo : .other
        return Entry(
            kind: kind, seconds: PhotoTimestamp.seconds(in: fields), taken: fields["taken"]?.stringValue,
            attachment: att.name, digest: att.digest)
    }

    /// `{"name","photos","videos","first","last","cover","complete"}`: the cover is the newest photo (the newest
    /// video when there is no photo), `first` and `last` the dates taken of the oldest and newest.
    static func json(_ name: String, _ entries: [(key: String, value: Entry)], complete: Bool) -> JSON {
        let media = entries.filter { $0.value.kind != .other }
        let newest = { (a: (key: String, value: Entry), b: (key: String, value: Entry)) -> Bool in
            (a.value.seconds ?? -.infinity, a.key) > (b.value.seconds ?? -.infinity, b.key)
        }
        let dated = media.filter { $0.value.seconds != nil }.sorted(by: newest)
        let cover =
            media.filter { $0.value.kind == .photo }.min(by: newest) ?? media.min(by: newest)
        let coverJSON: JSON =
            cover.map {
                ["id": .string($0.key), "name": .string($0.value.attachment), "digest": .string($0.value.digest)]
            }
            ?? .null
        return [
            "name": .string(name), "photos": .int(media.count { $0.value.kind == .photo }),
            "videos": .int(media.count { $0.value.kind == .video }),
            "first": dated.last?.value.taken.map(JSON.string) ?? .null,
            "last": dated.first?.value.taken.map(JSON.string) ?? .null, "cover": coverJSON, "complete": .bool(complete),
        ]
    }
}
