import CouchCrypto
import CouchStore
import Foundation
import Testing

@Suite("BlobStore")
struct BlobStoreTests {
    /// A fresh directory per test, removed afterwards.
    private final class Scratch {
        let path: String
        init() {
            path = NSTemporaryDirectory() + "blobstore-test-" + Secrets.randomBytes(8).hexString + "/db"
        }
        deinit { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    }

    private func files(in directory: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var out: [String] = []
        while let next = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + next, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                out.append(next)
            }
        }
        return out.sorted()
    }

    private func store(_ bytes: [UInt8], in store: BlobStore) throws -> String {
        let writer = try store.makeWriter()
        try writer.write(bytes)
        return try writer.commit().key
    }

    @Test func keyIsMD5OfContentAndDigestsAreReported() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let data = Array("hello, attachments".utf8)
        let writer = try blobs.makeWriter(sha1: true)
        try writer.write(Array(data.prefix(5)))
        try writer.write(Array(data.dropFirst(5)))
        #expect(writer.length == data.count)
        let result = try writer.commit()
        #expect(result.key == Digest.hash(.md5, data).hexString)
        #expect(result.md5 == Digest.hash(.md5, data))
        #expect(result.sha1 == Digest.hash(.sha1, data))
        #expect(result.length == data.count)
        #expect(blobs.exists(result.key))
        #expect(try blobs.size(result.key) == data.count)
        // Fanned out by the first two hex characters.
        #expect(files(in: scratch.path) == ["\(result.key.prefix(2))/\(result.key)"])
        let reader = try blobs.openReader(result.key)
        #expect(reader.length == data.count)
        #expect(try reader.read(at: 0, upTo: 1000) == data)
    }

    @Test func sameBytesTwiceAreStoredOnce() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let a = try store(Array("same".utf8), in: blobs)
        let b = try store(Array("same".utf8), in: blobs)
        let c = try store(Array("different".utf8), in: blobs)
        #expect(a == b && a != c)
        #expect(files(in: scratch.path).count == 2)
        #expect(Set(try blobs.keys()) == [a, c])
    }

    @Test func sha1IsComputedOnlyWhenAsked() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let writer = try blobs.makeWriter()
        try writer.write(Array("no sha1".utf8))
        #expect(try writer.commit().sha1 == nil)
    }

    @Test func announcedStoredBytesAreOnlyHashed() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let data = Array("a photo sent again".utf8)
        let key = try store(data, in: blobs)
        let path = scratch.path + "/" + key.prefix(2) + "/" + key
        // Age the stored file, so the refresh of its time is visible.
        var old = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &old, 0) == 0)
        let writer = try blobs.makeWriter(sha1: true, expecting: key)
        #expect(writer.isVerifyingOnly)
        // Refreshed when the writer is made, so compaction's grace window covers the upload.
        #expect(
            (try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date).map {
                $0.timeIntervalSince1970 > 2_000_000
            } == true)
        try writer.write(Array(data.prefix(3)))
        #expect(files(in: scratch.path + "/tmp").isEmpty)  // nothing written anywhere
        try writer.write(Array(data.dropFirst(3)))
        let result = try writer.commit()
        #expect(result.key == key && result.length == data.count)
        #expect(result.sha1 == Digest.hash(.sha1, data))
        #expect(files(in: scratch.path) == ["\(key.prefix(2))/\(key)"])
        #expect(try blobs.openReader(key).read(at: 0, upTo: 100) == data)
    }

    @Test func aDirectoryEntryIsSyncedUntilKnownDurableAndForgottenWhenRemoved() throws {
        let scratch = Scratch()
        let data = Array("the same photo, pushed many times".utf8)
        let key: String
        do {
            let blobs = try BlobStore(directory: scratch.path)
            key = try store(data, in: blobs)
            #expect(blobs.isKnownDurable(key))  // renamed in, then its directory synced
        }
        // A store opened on existing files (a restart) cannot know whether their entries were synced.
        let reopened = try BlobStore(directory: scratch.path)
        #expect(!reopened.isKnownDurable(key))
        let verifying = try reopened.makeWriter(expecting: key)
        #expect(verifying.isVerifyingOnly)
        try verifying.write(data)
        #expect(try verifying.commit().key == key)
        #expect(reopened.isKnownDurable(key))  // synced by that commit; later ones skip the directory sync
        #expect(try store(data, in: reopened) == key)  // the temp-file dedupe path agrees
        #expect(try reopened.removeAll(except: []) == 1)
        #expect(!reopened.isKnownDurable(key))
        // Stored again after removal: renamed in and synced anew.
        #expect(try store(data, in: reopened) == key && reopened.isKnownDurable(key))
        try reopened.destroy()
        #expect(!reopened.isKnownDurable(key))
    }

    @Test func announcedKeyNotStoredWritesTheBytes() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let data = Array("first upload".utf8)
        let key = Digest.hash(.md5, data).hexString
        let writer = try blobs.makeWriter(expecting: key)
        #expect(!writer.isVerifyingOnly)
        try writer.write(data)
        #expect(try writer.commit().key == key)
        #expect(blobs.exists(key))
        // An invalid announced key (a path, upper case) never names a file: the bytes are written.
        for bogus in ["../../etc/passwd", key.uppercased(), "tmp"] {
            let other = try blobs.makeWriter(expecting: bogus)
            #expect(!other.isVerifyingOnly)
            other.abort()
        }
    }

    @Test func bytesDifferingFromTheAnnouncedStoredBlobAreRefusedAndNotStored() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let key = try store(Array("the real photo".utf8), in: blobs)
        let writer = try blobs.makeWriter(expecting: key)
        try writer.write(Array("a forged photo".utf8))
        let actual = Digest.hash(.md5, Array("a forged photo".utf8)).hexString
        #expect(throws: BlobStoreError.digestMismatch(expected: key, actual: actual)) { try writer.commit() }
        #expect(throws: BlobStoreError.closed) { try writer.commit() }
        #expect(Set(try blobs.keys()) == [key])
        // Too short or too long is a mismatch as well.
        for forged in [Array("the real phot".utf8), Array("the real photo!".utf8), []] {
            let again = try blobs.makeWriter(expecting: key)
            try again.write(forged)
            #expect(throws: BlobStoreError.self) { try again.commit() }
        }
        #expect(Set(try blobs.keys()) == [key])
    }

    @Test func hashOnlyCommitFailsIfTheBlobWasRemovedMeanwhile() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let data = Array("compacted away".utf8)
        let key = try store(data, in: blobs)
        let writer = try blobs.makeWriter(expecting: key)
        try writer.write(data)
        #expect(try blobs.removeAll(except: []) == 1)
        #expect(throws: BlobStoreError.notFound(key: key)) { try writer.commit() }
    }

    @Test func emptyBlob() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let key = try store([], in: blobs)
        #expect(key == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(try blobs.openReader(key).read(at: 0, upTo: 10) == [])
    }

    @Test func abortLeavesNothing() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let writer = try blobs.makeWriter()
        try writer.write(Array("partial upload".utf8))
        #expect(files(in: scratch.path).count == 1)  // the temp file
        writer.abort()
        writer.abort()
        #expect(files(in: scratch.path).isEmpty)
        #expect(throws: BlobStoreError.closed) { try writer.write([1]) }
        #expect(throws: BlobStoreError.closed) { try writer.commit() }
        // Dropping a writer without commit or abort also removes its temp file.
        do {
            let dropped = try blobs.makeWriter()
            try dropped.write(Array("dropped".utf8))
        }
        #expect(files(in: scratch.path).isEmpty)
    }

    @Test func reopenRemovesTempFilesLeftByACrash() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let kept = try store(Array("committed".utf8), in: blobs)
        // What a crashed process leaves: temp files with another process's token.
        for name in ["0123456789abcdef-aaaa.tmp", "feedfacefeedface-bbbb.tmp", "junk"] {
            #expect(FileManager.default.createFile(atPath: scratch.path + "/tmp/" + name, contents: Data("x".utf8)))
        }
        // An upload still in flight in this process survives a second open.
        let inFlight = try blobs.makeWriter()
        try inFlight.write(Array("in flight".utf8))
        let reopened = try BlobStore(directory: scratch.path)
        #expect(files(in: scratch.path + "/tmp").count == 1)
        #expect(reopened.exists(kept))
        let key = try inFlight.commit().key
        #expect(reopened.exists(key))
        #expect(files(in: scratch.path + "/tmp").isEmpty)
    }

    @Test func removeAllExceptKeepsReferencedBlobs() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let keys = try (0..<20).map { try store(Array("blob \($0)".utf8), in: blobs) }
        let keep = Set(keys.prefix(5))
        #expect(try blobs.removeAll(except: keep) == 15)
        #expect(Set(try blobs.keys()) == keep)
        for key in keys { #expect(blobs.exists(key) == keep.contains(key)) }
        #expect(try blobs.removeAll(except: keep) == 0)
        // Blobs younger than the grace period survive.
        _ = try store(Array("fresh".utf8), in: blobs)
        #expect(try blobs.removeAll(except: keep, minimumAge: .seconds(3600)) == 0)
        #expect(try blobs.removeAll(except: keep) == 1)
    }

    @Test func readsAtOffsetsAndPastTheEnd() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let data = (0..<1000).map { UInt8($0 % 251) }
        let reader = try blobs.openReader(try store(data, in: blobs))
        #expect(try reader.read(at: 0, upTo: 10) == Array(data[0..<10]))
        #expect(try reader.read(at: 500, upTo: 100) == Array(data[500..<600]))
        #expect(try reader.read(at: 990, upTo: 100) == Array(data[990...]))
        #expect(try reader.read(at: 1000, upTo: 10) == [])
        #expect(try reader.read(at: 5000, upTo: 10) == [])
        #expect(throws: BlobStoreError.invalidRange(offset: -1, count: 5)) { try reader.read(at: -1, upTo: 5) }
        reader.close()
        #expect(throws: BlobStoreError.closed) { try reader.read(at: 0, upTo: 5) }
    }

    @Test func refusesKeysThatAreNotMD5Hex() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        for key in [
            "../../etc/passwd", "", "D41D8CD98F00B204E9800998ECF8427E", "d41d8cd98f00b204e9800998ecf8427", "tmp/x",
        ] {
            #expect(!blobs.exists(key))
            #expect(throws: BlobStoreError.invalidKey(key)) { try blobs.openReader(key) }
            #expect(throws: BlobStoreError.invalidKey(key)) { try blobs.size(key) }
        }
        #expect(throws: BlobStoreError.notFound(key: "d41d8cd98f00b204e9800998ecf8427e")) {
            try blobs.openReader("d41d8cd98f00b204e9800998ecf8427e")
        }
    }

    @Test func destroyRemovesEverythingButOpenReadersStillWork() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        let key = try store(Array("going away".utf8), in: blobs)
        let reader = try blobs.openReader(key)
        try blobs.destroy()
        #expect(!FileManager.default.fileExists(atPath: scratch.path))
        #expect(try reader.read(at: 0, upTo: 100) == Array("going away".utf8))
        #expect(!blobs.exists(key))
    }

    /// The process's resident size is shared with every test running beside this one, which can add a few MiB
    /// while a stream is written; buffering the upload would add 20 MiB every time. So a stream is written up to
    /// three times and the least growth must stay under 10 MiB.
    @Test func streams20MiBIn64KiBChunksWithBoundedMemory() throws {
        let scratch = Scratch()
        let blobs = try BlobStore(directory: scratch.path)
        var growths: [Int] = []
        for _ in 0..<3 {
            let (result, digest, growth) = try stream20MiB(into: blobs)
            #expect(result.length == 20 * 1024 * 1024)
            #expect(result.key == digest)
            growths.append(growth)
            if growth < 10 * 1024 * 1024 {
                // Read it back in chunks and check the digest.
                let reader = try blobs.openReader(result.key)
                let check = Digest(.md5)
                var offset = 0
                while offset < reader.length {
                    let piece = try reader.read(at: offset, upTo: 64 * 1024)
                    check.update(piece)
                    offset += piece.count
                }
                #expect(check.finalize().hexString == result.key)
                break
            }
        }
        #expect((growths.min() ?? .max) < 10 * 1024 * 1024, "resident memory grew by \(growths) bytes")
    }

    /// Writes 20 MiB in 64 KiB chunks; what was committed, its md5 and how much the resident size grew meanwhile.
    private func stream20MiB(into blobs: BlobStore) throws -> (
        result: (key: String, md5: [UInt8], sha1: [UInt8]?, length: Int), digest: String, growth: Int
    ) {
        let writer = try blobs.makeWriter()
        let md5 = Digest(.md5)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let residentBefore = residentBytes()
        for round in 0..<320 {
            for i in stride(from: 0, to: chunk.count, by: 4096) {
                chunk[i] = UInt8(truncatingIfNeeded: round &* 31 &+ i)
            }
            md5.update(chunk)
            try writer.write(chunk)
        }
        let growth = residentBytes() - residentBefore
        return (try writer.commit(), md5.finalize().hexString, growth)
    }

    private func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
