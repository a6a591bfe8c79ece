import CouchCrypto
import CouchStore
import Foundation
import Testing

@Suite("Trash")
struct TrashTests {
    /// A fresh directory per test, removed afterwards.
    private final class Scratch {
        let path: String
        init() { path = NSTemporaryDirectory() + "trash-test-" + Secrets.randomBytes(8).hexString }
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    private func names(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    /// A directory tree of `files` files in two levels, like a blob store's fan-out.
    private func makeTree(at path: String, files: Int) throws {
        for index in 0..<files {
            let fan = path + "/" + String(format: "%02x", index % 7)
            try FileManager.default.createDirectory(atPath: fan, withIntermediateDirectories: true)
            try Data("blob \(index)".utf8).write(to: URL(fileURLWithPath: fan + "/\(index)"))
        }
    }

    @Test func aTakenTreeIsGoneAtOnceAndRemovedInTheBackground() throws {
        let scratch = Scratch()
        let trash = try Trash(directory: scratch.path + "/root/.trash")
        let tree = scratch.path + "/root/db"
        try makeTree(at: tree, files: 50)
        #expect(trash.take(tree))
        #expect(!FileManager.default.fileExists(atPath: tree))  // the name is free before anything is unlinked
        trash.drain()
        #expect(try names(in: trash.directory) == [])
        #expect(trash.pendingCount == 0)
        // The name can be used again at once, and a second take of the same name is its own entry.
        try makeTree(at: tree, files: 3)
        #expect(trash.take(tree))
        trash.drain()
        #expect(try names(in: trash.directory) == [] && !FileManager.default.fileExists(atPath: tree))
    }

    @Test func aMissingPathIsNotTaken() throws {
        let scratch = Scratch()
        let trash = try Trash(directory: scratch.path + "/.trash")
        #expect(!trash.take(scratch.path + "/no-such-db"))
        #expect(trash.pendingCount == 0)
    }

    @Test func whatAStoppedProcessLeftIsRemovedWhenTheTrashOpens() throws {
        let scratch = Scratch()
        let directory = scratch.path + "/.trash"
        try makeTree(at: directory + "/left-by-a-crash", files: 20)
        try Data("a file".utf8).write(to: URL(fileURLWithPath: directory + "/a-file"))
        let trash = try Trash(directory: directory)
        trash.drain()
        #expect(try names(in: directory) == [])
    }

    @Test func aTrashThatCannotBeMadeThrows() throws {
        let scratch = Scratch()
        try Data().write(to: URL(fileURLWithPath: scratch.path))  // a file where the parent directory should be
        #expect(throws: BlobStoreError.self) { try Trash(directory: scratch.path + "/.trash") }
    }

    @Test func aDestroyedStoreFreesItsNameWhileOpenReadersKeepReading() throws {
        let scratch = Scratch()
        let trash = try Trash(directory: scratch.path + "/.trash")
        let store = try BlobStore(directory: scratch.path + "/db")
        let writer = try store.makeWriter()
        let bytes = Array("a photo's bytes".utf8)
        try writer.write(bytes)
        let key = try writer.commit().key
        let reader = try store.openReader(key)
        try store.destroy(via: trash)
        #expect(!FileManager.default.fileExists(atPath: store.directory))
        // A database created again under the name starts empty, whatever the trash still holds.
        let again = try BlobStore(directory: scratch.path + "/db")
        #expect(!again.exists(key))
        trash.drain()
        #expect(try names(in: trash.directory) == [])
        #expect(try reader.read(at: 0, upTo: bytes.count) == bytes)  // the open file outlives its unlink
    }

    @Test func withoutATrashDestroyRemovesTheFilesItself() throws {
        let scratch = Scratch()
        let store = try BlobStore(directory: scratch.path + "/db")
        let writer = try store.makeWriter()
        try writer.write(Array("bytes".utf8))
        _ = try writer.commit()
        try store.destroy()
        #expect(!FileManager.default.fileExists(atPath: store.directory))
    }
}
