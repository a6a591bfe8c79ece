import Foundation
import Testing

@testable import CouchServer

/// One data dir, one process (`DataDirLock`). `flock` locks belong to an open file, so a second open in this
/// process is refused as a second process would be; the e2e tests (`test_data_dir_lock.py`) run real ones.
@Suite struct DataDirLockTests {
    private func temporaryDir() -> String {
        NSTemporaryDirectory() + "couchlite-lock-test-" + UUID().uuidString
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : 0
    }

    @Test func aSecondHolderIsRefusedWithTheFirstsPid() throws {
        let dir = temporaryDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try DataDirLock.acquire(dataDir: dir)
        #expect(throws: DataDirLock.Held(dataDir: dir, pid: getpid())) { _ = try DataDirLock.acquire(dataDir: dir) }
        let text = try String(contentsOfFile: first.path, encoding: .utf8)
        #expect(text == "\(getpid())\n")
        #expect(mode(first.path) == 0o600)
        #expect(mode(dir) == 0o700)
        first.release()
        let second = try DataDirLock.acquire(dataDir: dir)
        second.release()
    }

    @Test func theRefusalNamesThePidAndTheDir() {
        let held = DataDirLock.Held(dataDir: "/srv/couch", pid: 4242)
        #expect(held.description.contains("pid 4242") && held.description.contains("/srv/couch"))
    }

    @Test func aStaleLockFileWithSomeoneElsesPidBlocksNothing() throws {
        let dir = temporaryDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/" + DataDirLock.fileName
        // Left by a process killed with SIGKILL: a pid, a wider mode, no lock.
        try Data("999999\nmore text than a pid\n".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        let lock = try DataDirLock.acquire(dataDir: dir)
        defer { lock.release() }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "\(getpid())\n")
        #expect(mode(path) == 0o600)
    }

    @Test func aSymlinkedLockFileIsNotFollowed() throws {
        let dir = temporaryDir()
        let victim = dir + "-victim"
        defer {
            try? FileManager.default.removeItem(atPath: dir)
            try? FileManager.default.removeItem(atPath: victim)
        }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        #expect(symlink(victim, dir + "/" + DataDirLock.fileName) == 0)
        #expect(throws: DataDirLock.Failure.self) { _ = try DataDirLock.acquire(dataDir: dir) }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
    }

    @Test func aFIFOInPlaceOfTheLockFileIsRefusedWithoutHanging() throws {
        let dir = temporaryDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        #expect(mkfifo(dir + "/" + DataDirLock.fileName, 0o600) == 0)
        #expect(throws: DataDirLock.Failure.self) { _ = try DataDirLock.acquire(dataDir: dir) }
    }

    @Test func aMissingDataDirIsCreatedOwnerOnly() throws {
        let root = temporaryDir()
        let dir = root + "/nested/data"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let lock = try DataDirLock.acquire(dataDir: dir)
        defer { lock.release() }
        #expect(mode(dir) == 0o700)
    }

    @Test func releasingTwiceIsHarmless() throws {
        let dir = temporaryDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let lock = try DataDirLock.acquire(dataDir: dir)
        lock.release()
        lock.release()
        let again = try DataDirLock.acquire(dataDir: dir)
        again.release()
    }
}
