import CouchCrypto
import CouchWire
import Foundation
import Synchronization
import Testing

@testable import CouchServer
@testable import PhotoDrop

/// The resumable upload state machine, without HTTP: creation, offsets, appends cut short, completion against
/// the digest, and each way a client (or an attacker) can get it wrong.
@Suite struct ResumableUploadsTests {
    static let bytes: [UInt8] = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    static var digest: String {
        let sha = Digest(.sha256)
        sha.update(bytes)
        return sha.finalize().hexString
    }

    /// A clock the tests move.
    final class Clock: Sendable {
        let seconds = Mutex(1_000_000)
        func advance(_ by: Int) { seconds.withLock { $0 += by } }
    }

    static func make(_ limits: ResumableUploads.Limits = .init(), clock: Clock = Clock()) -> ResumableUploads {
        let directory = NSTemporaryDirectory() + "uploads-" + UUID().uuidString
        return ResumableUploads(directory: directory, limits: limits, now: { clock.seconds.withLock { $0 } })
    }

    static func create(
        _ uploads: ResumableUploads, owner: String = "user:alice", database: String = "photos",
        length: Int = bytes.count, sha256: String = digest
    ) throws -> (upload: PartialUpload, offset: Int, resumed: Bool) {
        try uploads.create(
            owner: owner, database: database, name: "clip.mp4", contentType: "video/mp4", modified: 0, length: length,
            sha256: sha256)
    }

    /// Feeds `slice` in chunks of `chunk` bytes, then throws `cut` (the connection dropping) if given.
    static func body(_ slice: ArraySlice<UInt8>, chunk: Int = 1000, cut: Bool = false)
        -> ((UnsafeRawBufferPointer) throws -> Void) throws -> Void
    {
        { consume in
            var start = slice.startIndex
            while start < slice.endIndex {
                let end = min(start + chunk, slice.endIndex)
                try Array(slice[start..<end]).withUnsafeBytes { try consume($0) }
                start = end
            }
            if cut { throw CouchError.badRequest("connection reset") }
        }
    }

    static func finished(_ uploads: ResumableUploads, _ upload: PartialUpload) throws -> [UInt8] {
        var out: [UInt8] = []
        try uploads.finish(upload) { out.append(contentsOf: $0) }
        return out
    }

    @Test func cutOffAppendKeepsItsBytesAndTheNextOneContinues() throws {
        let uploads = Self.make()
        let (upload, offset, resumed) = try Self.create(uploads)
        #expect(offset == 0 && !resumed)
        #expect(throws: CouchError.self) {
            _ = try uploads.append(upload, at: 0, declared: nil, Self.body(Self.bytes[0..<6000], cut: true))
        }
        #expect(try uploads.lookup(upload.id, owner: "user:alice", database: "photos").offset == 6000)
        let reached = try uploads.append(upload, at: 6000, declared: 4000, Self.body(Self.bytes[6000...]))
        #expect(reached == Self.bytes.count)
        #expect(try Self.finished(uploads, upload) == Self.bytes)
    }

    @Test func pickingTheSameFileAgainResumesTheSameUpload() throws {
        let uploads = Self.make()
        let first = try Self.create(uploads)
        _ = try uploads.append(first.upload, at: 0, declared: nil, Self.body(Self.bytes[0..<2500]))
        let again = try Self.create(uploads)
        #expect(again.resumed && again.upload.id == first.upload.id && again.offset == 2500)
        // Someone else's same bytes are their own upload.
        let other = try Self.create(uploads, owner: "user:bob")
        #expect(!other.resumed && other.upload.id != first.upload.id)
    }

    @Test func offsetBeyondWhatTheServerHasIsRefused() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads)
        #expect(throws: ResumableUploads.OffsetMismatch(offset: 0)) {
            _ = try uploads.append(upload, at: 5000, declared: nil, Self.body(Self.bytes[5000...]))
        }
        #expect(throws: ResumableUploads.OffsetMismatch(offset: 0)) {
            _ = try uploads.append(upload, at: Self.bytes.count + 1, declared: 0, Self.body([]))
        }
        #expect(uploads.offset(of: upload.id) == 0)
    }

    @Test func overlappingAppendIsRefusedWithTheServersOffset() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads)
        _ = try uploads.append(upload, at: 0, declared: nil, Self.body(Self.bytes[0..<3000]))
        #expect(throws: ResumableUploads.OffsetMismatch(offset: 3000)) {
            _ = try uploads.append(upload, at: 2000, declared: nil, Self.body(Self.bytes[2000...]))
        }
        #expect(uploads.offset(of: upload.id) == 3000)
    }

    @Test func bodyPastThePromisedLengthIsRefused() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads, length: 100)
        // Declared: refused before reading.
        #expect(throws: CouchError.self) {
            _ = try uploads.append(upload, at: 0, declared: 101, Self.body(Self.bytes[0..<101]))
        }
        #expect(uploads.offset(of: upload.id) == 0)
        // Undeclared (chunked): refused at the chunk that would go past, what fits is kept.
        #expect(throws: CouchError.self) {
            _ = try uploads.append(upload, at: 0, declared: nil, Self.body(Self.bytes[0..<150], chunk: 60))
        }
        #expect(uploads.offset(of: upload.id) == 60)
    }

    @Test func wrongDigestNeverBecomesAFileAndIsRemoved() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads, sha256: String(repeating: "0", count: 64))
        _ = try uploads.append(upload, at: 0, declared: nil, Self.body(Self.bytes[...]))
        #expect(throws: CouchError.self) { _ = try Self.finished(uploads, upload) }
        #expect(throws: CouchError.self) { _ = try uploads.lookup(upload.id, owner: "user:alice", database: "photos") }
    }

    @Test func incompleteUploadCannotBeFinished() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads)
        _ = try uploads.append(upload, at: 0, declared: nil, Self.body(Self.bytes[0..<10]))
        #expect(throws: CouchError.conflict) { _ = try Self.finished(uploads, upload) }
    }

    @Test func tooManyPartialUploadsAreRefused() throws {
        var limits = ResumableUploads.Limits()
        limits.perOwner = 3
        limits.total = 5
        let uploads = Self.make(limits)
        for n in 0..<3 { _ = try Self.create(uploads, sha256: String(repeating: String(n), count: 64)) }
        #expect(throws: CouchError.self) { _ = try Self.create(uploads, sha256: String(repeating: "a", count: 64)) }
        // Per owner and database: bob and another database still may, until the server's total.
        _ = try Self.create(uploads, owner: "user:bob")
        _ = try Self.create(uploads, database: "other")
        #expect(throws: CouchError.serviceUnavailable("Too many unfinished uploads on this server; try again later.")) {
            _ = try Self.create(uploads, owner: "user:carol")
        }
    }

    @Test func expiredUploadIsGoneAndItsBytesRemoved() throws {
        let clock = Clock()
        let uploads = Self.make(clock: clock)
        let (upload, _, _) = try Self.create(uploads)
        _ = try uploads.append(upload, at: 0, declared: nil, Self.body(Self.bytes[0..<500]))
        clock.advance(uploads.limits.maxAge)
        #expect(throws: CouchError.notFound("missing")) {
            _ = try uploads.lookup(upload.id, owner: "user:alice", database: "photos")
        }
        #expect(!FileManager.default.fileExists(atPath: uploads.directory + "/" + upload.id + ".part"))
        // And a sweep takes the expired ones of everyone.
        let other = try Self.create(uploads, owner: "user:bob")
        clock.advance(uploads.limits.maxAge)
        #expect(uploads.sweep().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: uploads.directory + "/" + other.upload.id + ".json"))
    }

    @Test func anotherUsersUploadIDIsNotFound() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads)
        #expect(throws: CouchError.notFound("missing")) {
            _ = try uploads.lookup(upload.id, owner: "user:mallory", database: "photos")
        }
        #expect(throws: CouchError.notFound("missing")) {
            _ = try uploads.lookup(upload.id, owner: "user:alice", database: "elsewhere")
        }
    }

    @Test func pathTraversalInUploadIDIsNotFound() throws {
        let uploads = Self.make()
        for id in ["../../etc/passwd", "", String(repeating: "A", count: 32), "0123456789abcdef0123456789abcde/"] {
            #expect(throws: CouchError.notFound("missing")) {
                _ = try uploads.lookup(id, owner: "user:alice", database: "photos")
            }
        }
    }

    @Test func malformedCreationIsRefused() throws {
        let uploads = Self.make()
        #expect(throws: CouchError.self) { _ = try Self.create(uploads, length: -1) }
        #expect(throws: CouchError.self) { _ = try Self.create(uploads, length: (1 << 40) + 1) }
        #expect(throws: CouchError.self) { _ = try Self.create(uploads, sha256: "XYZ") }
        #expect(throws: CouchError.self) { _ = try Self.create(uploads, sha256: String(repeating: "F", count: 64)) }
    }

    @Test func concurrentAppendToOneUploadIsBusy() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads)
        try uploads.exclusively(upload.id) {
            #expect(throws: ResumableUploads.Busy.self) { try uploads.exclusively(upload.id) {} }
        }
        try uploads.exclusively(upload.id) {}
    }

    @Test func filesAreOwnerOnly() throws {
        let uploads = Self.make()
        let (upload, _, _) = try Self.create(uploads)
        for path in [
            uploads.directory, uploads.directory + "/" + upload.id + ".part",
            uploads.directory + "/" + upload.id + ".json",
        ] {
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect((mode ?? 0o777) & 0o077 == 0, "\(path)")
        }
    }
}

/// Issue 35, item 5: an abandoned promise expires, however many are made, and the drop credentials' uploads are
/// each sender's own.
@Suite struct AbandonedUploadTests {
    typealias Clock = ResumableUploadsTests.Clock

    static func promise(_ uploads: ResumableUploads, _ n: Int, owner: String = "drop:drop-1@10.0.0.1") throws {
        _ = try uploads.create(
            owner: owner, database: "photos", name: "p\(n).jpg", contentType: "image/jpeg", modified: 0, length: 1,
            sha256: String(format: "%064x", n))
    }

    @Test func abandonedPromisesExpireAndFreeTheirSlotsEveryTime() throws {
        let clock = Clock()
        let uploads = ResumableUploadsTests.make(clock: clock)
        var n = 0
        for _ in 0..<200 {
            // A sender promises every slot it has and sends nothing.
            for _ in 0..<uploads.limits.perOwner {
                try Self.promise(uploads, n)
                n += 1
            }
            #expect(throws: CouchError.self) { try Self.promise(uploads, n) }
            // An hour without a byte: they are abandoned, their files gone, and the slots free again.
            clock.advance(60 * 60)
            #expect(uploads.sweep().isEmpty)
            let files = (try? FileManager.default.contentsOfDirectory(atPath: uploads.directory)) ?? []
            #expect(files.isEmpty, "\(files.count) files left")
        }
    }

    @Test func anUploadReceivingBytesIsNotAbandoned() throws {
        let clock = Clock()
        let uploads = ResumableUploadsTests.make(clock: clock)
        let (upload, _, _) = try ResumableUploadsTests.create(uploads)
        var offset = 0
        for _ in 0..<10 {
            // Thirty minutes apart, five hours in all: never an hour without a byte.
            clock.advance(30 * 60)
            let (_, at) = try uploads.lookup(upload.id, owner: "user:alice", database: "photos")
            offset = try uploads.append(
                upload, at: at, declared: nil, ResumableUploadsTests.body(ResumableUploadsTests.bytes[at..<(at + 10)]))
        }
        #expect(offset == 100)
        #expect(uploads.sweep().count == 1)
    }

    @Test func dropSendersOwnTheirUploadsAndSlots() {
        var drop = UserContext(name: "drop-1", roles: [], handler: "default")
        drop.scope = "photos"
        let one = ResumableUploads.owner(of: drop, from: "10.0.0.1")
        let other = ResumableUploads.owner(of: drop, from: "10.0.0.2")
        #expect(!one.utf8Equals(other))
        #expect(ResumableUploads.owner(of: drop, from: "10.0.0.1").utf8Equals(one))
        // Everyone else's uploads are their user's, wherever they connect from.
        let alice = UserContext(name: "alice", roles: [], handler: "default")
        #expect(ResumableUploads.owner(of: alice, from: "10.0.0.1").utf8Equals("user:alice"))
        #expect(ResumableUploads.owner(of: alice, from: "10.0.0.2").utf8Equals("user:alice"))
    }
}
