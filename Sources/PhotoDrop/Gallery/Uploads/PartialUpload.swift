import CouchServer
import CouchWire

/// An upload the gallery has been promised but not yet wholly received: who started it, into which database,
/// the file it will become, and the length and SHA-256 its bytes must have before they may become a photo.
/// Stored beside its bytes as `<id>.json` (`ResumableUploads`).
struct PartialUpload: Sendable, Equatable {
    /// 32 lowercase hex digits, random: the only name the upload has, and never guessable.
    let id: String
    /// `ResumableUploads.owner(of:from:)` of the user who created it: nobody else may see or extend it.
    let owner: String
    let database: String
    let name: String
    let contentType: String
    /// The file's modification time, milliseconds since 1970 (the browser's `File.lastModified`).
    let modified: Int
    let length: Int
    /// 64 lowercase hex digits.
    let sha256: String
    /// Seconds since 1970: the upload expires `ResumableUploads.Limits.maxAge` after it.
    let created: Int
    /// The revision `couchlite push` has for the photo, and its fields: with them the completed file becomes that
    /// very revision (as a replicated write), so the replication that follows finds it there and sends nothing.
    var revision: (rev: String, fields: JSONObject)? = nil

    var json: JSON {
        .object(
            JSONObject([
                ("id", .string(id)), ("owner", .string(owner)), ("database", .string(database)),
                ("name", .string(name)), ("content_type", .string(contentType)), ("modified", .int(modified)),
                ("length", .int(length)), ("sha256", .string(sha256)), ("created", .int(created)),
                ("rev", revision.map { .string($0.rev) } ?? .null),
                ("fields", revision.map { .object($0.fields) } ?? .null),
            ]))
    }

    init(
        id: String, owner: String, database: String, name: String, contentType: String, modified: Int, length: Int,
        sha256: String, created: Int
    ) {
        self.id = id
        self.owner = owner
        self.database = database
        self.name = name
        self.contentType = contentType
        self.modified = modified
        self.length = length
        self.sha256 = sha256
        self.created = created
    }

    /// Reads what `json` wrote; nil for anything else (a damaged file is treated as absent and swept).
    init?(json: JSON) {
        guard let id = json["id"]?.stringValue, let owner = json["owner"]?.stringValue,
            let database = json["database"]?.stringValue, let name = json["name"]?.stringValue,
            let contentType = json["content_type"]?.stringValue, let modified = json["modified"]?.intValue,
            let length = json["length"]?.intValue, let sha256 = json["sha256"]?.stringValue,
            let created = json["created"]?.intValue
        else { return nil }
        self.init(
            id: id, owner: owner, database: database, name: name, contentType: contentType, modified: modified,
            length: length, sha256: sha256, created: created)
        if let rev = json["rev"]?.stringValue, let fields = json["fields"]?.objectValue { revision = (rev, fields) }
    }

    static func == (lhs: PartialUpload, rhs: PartialUpload) -> Bool {
        lhs.json == rhs.json
    }

    /// Whether `text` could be an upload id: anything else is answered as an unknown id, and never reaches a path.
    static func isValidID(_ text: String) -> Bool { isLowerHex(text, count: 32) }

    /// Whether `text` is a SHA-256 digest as the protocol writes it (64 lowercase hex digits).
    static func isValidDigest(_ text: String) -> Bool { isLowerHex(text, count: 64) }

    private static func isLowerHex(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
