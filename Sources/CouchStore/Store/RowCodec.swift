import RevTree

/// Where a revision's body is stored: the `bodies` row written by update `seq` (the revision's `_local_seq`), and
/// what the revision counts in `sizes.external` — its body's bytes plus its attachments' stored bytes, as CouchDB
/// counts them — kept here so the size can follow leaves without reading bodies or attachment lists.
struct BodyRef: Equatable, Sendable {
    var seq: Int
    var externalSize: Int

    init(seq: Int, externalSize: Int) {
        self.seq = seq
        self.externalSize = externalSize
    }

    /// The reference to a body written by update `seq` with these attachments.
    init(seq: Int, body: [UInt8], attachments: [AttachmentInfo]) {
        self.init(seq: seq, externalSize: body.count + attachments.reduce(0) { $0 + ($1.encodedLength ?? $1.length) })
    }
}

/// A document's revision tree as stored in its `documents` row, with where each node's body lives.
struct StoredTree {
    var tree: RevTree
    /// Parallel to `tree.nodes`; nil where the node has no body (`?REV_MISSING`).
    var bodies: [BodyRef?]

    func body(of rev: RevID) -> BodyRef? { tree.index(of: rev).flatMap { bodies[$0] } }

    /// What the leaves count in `sizes.external`: this document's share of it.
    var leafBodyBytes: Int {
        tree.nodes.indices.reduce(0) { sum, index in
            tree.nodes[index].isLeaf ? sum + (bodies[index]?.externalSize ?? 0) : sum
        }
    }
}

/// The binary forms of a document's tree (`documents.tree`) and of a revision's attachment list
/// (`bodies.attachments`).
///
/// Tree, format 1: a format byte, then a varint node count and per node: varint generation, varint hash length and
/// hash bytes, varint parent position + 1 (0 for a root), a flags byte (1 = deleted, 2 = has a body) and, with a
/// body, varint body seq and varint external size (body plus attachment bytes). Attachments: a varint count, then per attachment name, content
/// type, digest (each a varint length and UTF-8 bytes), varint length, varint revpos, a flags byte (1 = encoding
/// follows, 2 = encoded length follows), those optional fields, and the blob key. Varints are unsigned LEB128.
/// Decoding checks every length against the bytes left, so a damaged row is an error, never a crash or a loop.
enum RowCodec {
    static let treeFormat: UInt8 = 1
    private static let deletedFlag: UInt8 = 1
    private static let bodyFlag: UInt8 = 2
    private static let encodingFlag: UInt8 = 1
    private static let encodedLengthFlag: UInt8 = 2

    // MARK: Trees

    static func encodeTree(_ nodes: [RevTree.LinkedNode], bodies: [BodyRef?]) -> [UInt8] {
        var out = ByteWriter(capacity: 2 + nodes.count * 44)
        out.bytes.append(treeFormat)
        out.varint(nodes.count)
        for (node, body) in zip(nodes, bodies) {
            out.varint(node.rev.pos)
            out.string(node.rev.hash)
            out.varint(node.parent.map { $0 + 1 } ?? 0)
            out.bytes.append((node.deleted ? deletedFlag : 0) | (body != nil ? bodyFlag : 0))
            if let body {
                out.varint(body.seq)
                out.varint(body.externalSize)
            }
        }
        return out.bytes
    }

    static func encodeTree(_ stored: StoredTree) -> [UInt8] {
        encodeTree(stored.tree.linked, bodies: stored.bodies)
    }

    static func decodeTree(_ raw: UnsafeRawBufferPointer) throws(StoreError) -> StoredTree {
        var input = ByteReader(raw)
        guard try input.byte() == treeFormat else { throw damaged("unknown revision tree format") }
        let count = try input.varint()
        // Every node takes at least four bytes, which bounds the count before anything is allocated.
        guard count >= 0, count <= input.remaining / 4 else { throw damaged("revision tree node count") }
        var nodes = [RevTree.LinkedNode]()
        var bodies = [BodyRef?]()
        nodes.reserveCapacity(count)
        bodies.reserveCapacity(count)
        for _ in 0..<count {
            let pos = try input.varint()
            let hash = try input.string()
            let parent = try input.varint()
            let flags = try input.byte()
            let body = flags & bodyFlag != 0 ? BodyRef(seq: try input.varint(), externalSize: try input.varint()) : nil
            guard pos >= 0, parent >= 0, parent <= count else { throw damaged("revision tree node") }
            nodes.append(
                RevTree.LinkedNode(
                    rev: RevID(pos: pos, hash: hash), parent: parent == 0 ? nil : parent - 1,
                    deleted: flags & deletedFlag != 0, hasBody: body != nil))
            bodies.append(body)
        }
        guard input.remaining == 0 else { throw damaged("bytes after the revision tree") }
        return StoredTree(tree: RevTree(linked: nodes), bodies: bodies)
    }

    // MARK: Attachments

    static func encodeAttachments(_ attachments: [AttachmentInfo]) -> [UInt8] {
        var out = ByteWriter(capacity: attachments.count * 120)
        out.varint(attachments.count)
        for info in attachments {
            out.string(info.name)
            out.string(info.contentType)
            out.string(info.digest)
            out.varint(info.length)
            out.varint(info.revpos)
            out.bytes.append(
                (info.encoding != nil ? encodingFlag : 0) | (info.encodedLength != nil ? encodedLengthFlag : 0))
            if let encoding = info.encoding { out.string(encoding) }
            if let encodedLength = info.encodedLength { out.varint(encodedLength) }
            out.string(info.blobKey)
        }
        return out.bytes
    }

    static func decodeAttachments(_ raw: UnsafeRawBufferPointer) throws(StoreError) -> [AttachmentInfo] {
        var input = ByteReader(raw)
        let count = try input.varint()
        guard count >= 0, count <= input.remaining / 7 else { throw damaged("attachment count") }
        var out = [AttachmentInfo]()
        out.reserveCapacity(count)
        for _ in 0..<count {
            let name = try input.string()
            let contentType = try input.string()
            let digest = try input.string()
            let length = try input.varint()
            let revpos = try input.varint()
            let flags = try input.byte()
            let encoding = flags & encodingFlag != 0 ? try input.string() : nil
            let encodedLength = flags & encodedLengthFlag != 0 ? try input.varint() : nil
            let blobKey = try input.string()
            out.append(
                AttachmentInfo(
                    name: name, contentType: contentType, digest: digest, length: length, revpos: revpos,
                    encoding: encoding, encodedLength: encodedLength, blobKey: blobKey))
        }
        guard input.remaining == 0 else { throw damaged("bytes after the attachments") }
        return out
    }

    static func damaged(_ what: String) -> StoreError { .internalError("damaged row: \(what)") }
}

/// Appends varints and length-prefixed strings.
struct ByteWriter {
    var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Unsigned LEB128 of the value's bit pattern (negative values, which the store never writes, take 10 bytes
    /// and still round-trip).
    mutating func varint(_ value: Int) {
        var rest = UInt64(bitPattern: Int64(value))
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }
}

/// Reads what `ByteWriter` wrote, checking every length against the bytes left.
struct ByteReader {
    private let raw: UnsafeRawBufferPointer
    private var offset = 0

    init(_ raw: UnsafeRawBufferPointer) { self.raw = raw }

    var remaining: Int { raw.count - offset }

    mutating func byte() throws(StoreError) -> UInt8 {
        guard offset < raw.count else { throw RowCodec.damaged("truncated") }
        defer { offset += 1 }
        return raw[offset]
    }

    mutating func varint() throws(StoreError) -> Int {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try byte()
            guard shift < 64 else { throw RowCodec.damaged("varint too long") }
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return Int(Int64(bitPattern: value)) }
            shift += 7
        }
    }

    mutating func string() throws(StoreError) -> String {
        let count = try varint()
        guard count >= 0, count <= remaining else { throw RowCodec.damaged("truncated string") }
        defer { offset += count }
        return String(decoding: UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)]), as: UTF8.self)
    }
}
