/// Metadata of one attachment of one revision; the bytes live in the blob store under `blobKey`.
public struct AttachmentInfo: Sendable, Equatable {
    public var name: String
    public var contentType: String
    /// Wire digest, e.g. `"md5-<base64>"` or `"sha1-<base64>"`.
    public var digest: String
    /// Decoded length in bytes.
    public var length: Int
    /// Generation of the revision that introduced these bytes.
    public var revpos: Int
    /// Stored encoding, e.g. `"gzip"`; nil for identity.
    public var encoding: String?
    /// Stored (encoded) length in bytes when `encoding` is set.
    public var encodedLength: Int?
    /// Key of the stored bytes in the blob store (hex md5 of the stored bytes).
    public var blobKey: String

    public init(
        name: String, contentType: String, digest: String, length: Int, revpos: Int, encoding: String? = nil,
        encodedLength: Int? = nil, blobKey: String
    ) {
        self.name = name
        self.contentType = contentType
        self.digest = digest
        self.length = length
        self.revpos = revpos
        self.encoding = encoding
        self.encodedLength = encodedLength
        self.blobKey = blobKey
    }
}

/// The `md5-…` digest CouchDB hashes into a new revision for an attachment when it is not the attachment's own
/// digest (a text-like attachment stored identity, whose CouchDB md5 is that of its gzip), or nil to hash its own.
/// Given the database's name and the attachment (its bytes are in that database's blob store under `blobKey`).
/// Called in the writer's transaction: it must be quick or cached.
public typealias AttachmentHashDigest = @Sendable (_ database: String, _ attachment: AttachmentInfo) -> String?

/// An attachment as written: new bytes already in the blob store, or a stub naming an ancestor's attachment.
public enum AttachmentRef: Sendable, Equatable {
    /// New data. For `applyEdits` the store sets `revpos` to the new revision's generation (CouchDB does the same
    /// for new data); for `applyReplicated` the given `revpos` is kept.
    case stored(AttachmentInfo)
    /// `{"stub": true}`: reuse the attachment of that name from the nearest stored ancestor; `revpos` and `digest`,
    /// when given, must match it.
    case stub(name: String, revpos: Int?, digest: String?)

    /// Whether this names an ancestor's attachment rather than carrying data.
    public var isStub: Bool {
        if case .stub = self { return true }
        return false
    }

    public var name: String {
        switch self {
        case .stored(let info): info.name
        case .stub(let name, _, _): name
        }
    }
}
