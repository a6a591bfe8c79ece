import RevTreeTestSupport
import Testing

@testable import CouchStore
@testable import RevTree

/// The stored forms of trees and attachment lists: exact round trips, and damaged bytes always refused.
@Suite struct RowCodecTests {
    /// A random tree built the way the store builds them (merges of random paths, then stemming), with a body on
    /// about half of its nodes.
    func randomStoredTree(seed: UInt64) throws -> StoredTree {
        var rng = SplitMix64(state: seed)
        let history = ReferenceHistory(size: Int.random(in: 1...40, using: &rng), using: &rng)
        var tree = RevTree()
        for _ in 0..<Int.random(in: 1...8, using: &rng) {
            let leaf = history.all.randomElement(using: &rng) ?? history.all[0]
            try tree.merge(
                path: history.path(to: leaf, length: Int.random(in: 1...6, using: &rng)),
                deleted: history.deleted[leaf] ?? false)
        }
        tree.stem(limit: Int.random(in: 2...10, using: &rng))
        let bodies = tree.nodes.indices.map { index -> BodyRef? in
            Bool.random(using: &rng)
                ? BodyRef(seq: index + 1 + Int.random(in: 0...1 << 40, using: &rng), externalSize: index * 37) : nil
        }
        return StoredTree(tree: tree, bodies: bodies)
    }

    func decodeTree(_ bytes: [UInt8]) throws -> StoredTree {
        try bytes.withUnsafeBytes { try RowCodec.decodeTree($0) }
    }

    func decodeAttachments(_ bytes: [UInt8]) throws -> [AttachmentInfo] {
        try bytes.withUnsafeBytes { try RowCodec.decodeAttachments($0) }
    }

    @Test(arguments: 0..<50)
    func treesRoundTripWithTheirBodies(seed: UInt64) throws {
        let stored = try randomStoredTree(seed: seed)
        let decoded = try decodeTree(RowCodec.encodeTree(stored))
        #expect(decoded.tree.linked.map(\.rev) == stored.tree.linked.map(\.rev))
        #expect(decoded.tree.linked.map(\.parent) == stored.tree.linked.map(\.parent))
        #expect(decoded.bodies == stored.bodies)
        // `hasBody` follows the body references, whatever the tree said.
        #expect(decoded.tree.nodes.map(\.hasBody) == stored.bodies.map { $0 != nil })
        #expect(decoded.tree.nodes.map(\.deleted) == stored.tree.nodes.map(\.deleted))
        #expect(decoded.tree.winner?.rev == stored.tree.winner?.rev)
    }

    @Test func attachmentsRoundTripWithOptionalFields() throws {
        let list = [
            AttachmentInfo(
                name: "a.jpg", contentType: "image/jpeg", digest: "md5-abc", length: 524_288, revpos: 3,
                blobKey: "0123"),
            AttachmentInfo(
                name: "thé 📷", contentType: "text/plain", digest: "md5-x", length: 0, revpos: 1, encoding: "gzip",
                encodedLength: 20, blobKey: "k"),
            AttachmentInfo(name: "", contentType: "", digest: "", length: 1 << 40, revpos: 1_000_000, blobKey: ""),
        ]
        #expect(try decodeAttachments(RowCodec.encodeAttachments(list)) == list)
        #expect(try decodeAttachments(RowCodec.encodeAttachments([])) == [])
    }

    @Test(arguments: 0..<10)
    func everyTruncationIsRefused(seed: UInt64) throws {
        let tree = RowCodec.encodeTree(try randomStoredTree(seed: seed))
        for end in 0..<tree.count {
            #expect(throws: StoreError.self) { try decodeTree(Array(tree[..<end])) }
        }
        let attachments = RowCodec.encodeAttachments([
            AttachmentInfo(
                name: "n", contentType: "c", digest: "d", length: 5, revpos: 2, encoding: "gzip", encodedLength: 4,
                blobKey: "b")
        ])
        for end in 0..<attachments.count {
            #expect(throws: StoreError.self) { try decodeAttachments(Array(attachments[..<end])) }
        }
    }

    @Test func trailingBytesAndUnknownFormatsAreRefused() throws {
        let tree = RowCodec.encodeTree(try randomStoredTree(seed: 7))
        #expect(throws: StoreError.self) { try decodeTree(tree + [0]) }
        #expect(throws: StoreError.self) { try decodeTree([RowCodec.treeFormat + 1] + tree.dropFirst()) }
        #expect(throws: StoreError.self) { try decodeAttachments(RowCodec.encodeAttachments([]) + [1]) }
    }

    @Test func hostileCountsAndVarintsAreRefusedWithoutAllocating() {
        // A node count of 2^62 followed by nothing, an endless varint, a negative count, a huge string length.
        let huge: [UInt8] = [RowCodec.treeFormat, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]
        #expect(throws: StoreError.self) { try decodeTree(huge) }
        #expect(throws: StoreError.self) { try decodeTree([RowCodec.treeFormat] + Array(repeating: 0xff, count: 20)) }
        var negative = ByteWriter(capacity: 16)
        negative.varint(-1)
        #expect(throws: StoreError.self) { try decodeAttachments(negative.bytes) }
        #expect(throws: StoreError.self) { try decodeTree([RowCodec.treeFormat] + negative.bytes) }
        // One node whose hash claims 1 MiB.
        var string = ByteWriter(capacity: 16)
        string.bytes.append(RowCodec.treeFormat)
        string.varint(1)
        string.varint(1)
        string.varint(1 << 20)
        string.bytes += [0x61, 0, 0]
        #expect(throws: StoreError.self) { try decodeTree(string.bytes) }
    }

    /// Generation 0 is CouchDB's too (a replicated `0-x`); a negative one is damage.
    @Test func aNodeWithANegativeGenerationOrAParentOutOfRangeIsRefused() throws {
        func node(pos: Int) -> [UInt8] {
            var writer = ByteWriter(capacity: 16)
            writer.bytes.append(RowCodec.treeFormat)
            writer.varint(1)
            writer.varint(pos)
            writer.string("a")
            writer.varint(0)
            writer.bytes.append(0)
            return writer.bytes
        }
        #expect(try decodeTree(node(pos: 0)).tree.winner?.rev == RevID(pos: 0, hash: "a"))
        #expect(throws: StoreError.self) { try decodeTree(node(pos: -1)) }
        #expect(throws: StoreError.self) { try decodeTree(node(pos: Int.min)) }
        var parent = ByteWriter(capacity: 16)
        parent.bytes.append(RowCodec.treeFormat)
        parent.varint(1)
        parent.varint(1)
        parent.string("a")
        parent.varint(5)
        parent.bytes.append(0)
        #expect(throws: StoreError.self) { try decodeTree(parent.bytes) }
    }

    @Test(arguments: 0..<20)
    func randomBytesNeverCrashTheDecoders(seed: UInt64) {
        var rng = SplitMix64(state: seed &+ 9000)
        for _ in 0..<500 {
            var bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng) { bytes.insert(RowCodec.treeFormat, at: 0) }
            // Either outcome is fine; what matters is that neither traps nor loops.
            if let stored = try? decodeTree(bytes) { _ = stored.tree.leaves.map { stored.tree.history(of: $0.rev) } }
            _ = try? decodeAttachments(bytes)
        }
    }
}
