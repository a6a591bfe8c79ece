import Foundation
import Synchronization

/// One data dir, one process: `<data-dir>/couchlite.lock`, held with `flock` for as long as the process that
/// took it uses the dir (`serve`, `receive`, and `push` and `replicate` when they open local databases). Two
/// processes over one dir would each keep their own view of its sequences, blobs and checkpoints in memory, and
/// write past each other's.
///
/// The kernel drops the lock when the process ends, however it ends (`kill -9` included), so a stale file blocks
/// nothing: the next process takes it and writes its own pid there. The pid is only for the message of a process
/// refused: the lock, not the file's content, is what decides. The descriptor is close-on-exec and workers are
/// started with every descriptor closed, so no child keeps the lock past the process.
package final class DataDirLock: Sendable {
    package static let fileName = "couchlite.lock"

    /// Another process holds the data dir: the command exits 75 (EX_TEMPFAIL), having written nothing there.
    package struct Held: Error, Equatable, CustomStringConvertible {
        package let dataDir: String
        /// The holder's pid as it wrote it, nil if it could not be read.
        package let pid: Int32?

        package var description: String {
            let holder = pid.map { "another couchlite process (pid \($0))" } ?? "another couchlite process"
            return "the data dir \(dataDir) is in use by \(holder); stop it first, or use another --data-dir"
        }
    }

    /// The lock file could not be opened or locked (not a regular file, a symlink, no permission).
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The locked descriptor; -1 once released.
    private let descriptor: Mutex<Int32>
    package let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = Mutex(descriptor)
        self.path = path
    }

    deinit { release() }

    /// Takes the lock of `dataDir` (creating the dir, owner-only, if it does not exist) or throws `Held`.
    /// Before the lock is held nothing in an existing dir is changed: a refused process leaves it as it was.
    package static func acquire(dataDir: String) throws -> DataDirLock {
        var info = stat()
        if stat(dataDir, &info) != 0 { try PrivateFile.createDirectory(dataDir) }
        let path = dataDir + "/" + fileName
        // O_NOFOLLOW: a symlink planted here must not make the server truncate the file it points at. O_NONBLOCK:
        // a FIFO planted here must not hang the start (it is refused below).
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, PrivateFile.fileMode)
        guard fd >= 0 else { throw failure("open", path) }
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw Failure(description: "\(path) is not a regular file")
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let error = errno
            guard error == EWOULDBLOCK else {
                close(fd)
                errno = error
                throw failure("flock", path)
            }
            let holder = readPID(fd)
            close(fd)
            throw Held(dataDir: dataDir, pid: holder)
        }
        if info.st_mode & 0o7777 != PrivateFile.fileMode { fchmod(fd, PrivateFile.fileMode) }
        let text = Array("\(getpid())\n".utf8)
        guard ftruncate(fd, 0) == 0, text.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, 0) }) == text.count
        else {
            let failed = failure("write", path)
            close(fd)
            throw failed
        }
        return DataDirLock(descriptor: fd, path: path)
    }

    /// Gives the data dir up (the process goes on without it); safe to call more than once.
    package func release() {
        let fd = descriptor.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        // Closing the only descriptor of the open file drops the flock.
        if fd >= 0 { close(fd) }
    }

    /// The pid the holder wrote. It writes it just after it took the lock, so an empty file is read again
    /// for a moment.
    private static func readPID(_ fd: Int32) -> Int32? {
        for _ in 0..<20 {
            var bytes = [UInt8](repeating: 0, count: 24)
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
            let text = count > 0 ? String(decoding: bytes[..<count], as: UTF8.self) : ""
            if let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0 { return pid }
            usleep(10_000)
        }
        return nil
    }

    private static func failure(_ operation: String, _ path: String) -> Failure {
        Failure(description: "cannot lock the data dir: \(operation) \(path): \(String(cString: strerror(errno)))")
    }
}
