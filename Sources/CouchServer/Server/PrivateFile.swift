import Foundation

/// Files and directories only the server's user may read, from the moment they exist, whatever the umask: the
/// `_users` database holds every password hash, `admins.json` the admins' and
/// `auth-secret` the key that signs session cookies.
///
/// The server also sets its umask to `077` at start (`ServerProcess`), so whatever SQLite, the blob
/// store or Foundation create is owner-only too; these helpers do not rely on it. Nothing is made
/// readable first and narrowed with `chmod` afterwards.
package enum PrivateFile {
    /// Mode of every file the server creates.
    static let fileMode: mode_t = 0o600
    /// Mode of every directory the server creates.
    static let directoryMode: mode_t = 0o700

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Replaces `path` atomically with `bytes`: a new temporary file created `0600` with
    /// `O_CREAT | O_EXCL` beside it is written, synced and renamed over `path`.
    package static func write(_ bytes: [UInt8], to path: String) throws {
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, fileMode)
        guard fd >= 0 else { throw failure("create", temporary) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                Foundation.write(fd, buffer.baseAddress.map { $0 + written }, bytes.count - written)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let error = failure("write", temporary)
                close(fd)
                unlink(temporary)
                throw error
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            let error = failure("fsync", temporary)
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = failure("rename", path)
            unlink(temporary)
            throw error
        }
    }

    /// Creates `path` and any missing parents `0700`. An existing directory that others may enter
    /// (made by an older version) is narrowed to `0700`.
    package static func createDirectory(_ path: String) throws {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw Failure(description: "\(path) is not a directory") }
            if info.st_mode & 0o077 != 0 { chmod(path, directoryMode) }
            return
        }
        let parent = parent(of: path)
        if !parent.isEmpty && parent != path && stat(parent, &info) != 0 { try createDirectory(parent) }
        guard mkdir(path, directoryMode) == 0 || errno == EEXIST else { throw failure("mkdir", path) }
    }

    /// The directory `path` names an entry of: "" for a bare name (`d`), `/` for `/d`. Foundation's
    /// `NSString.deletingLastPathComponent` traps on a one-character name (`d`, `d/`, `.`), which a relative
    /// `--data-dir d` is, so the path is split here, on its bytes.
    package static func parent(of path: String) -> String {
        let slash = UInt8(ascii: "/")
        var bytes = Array(path.utf8)
        while bytes.count > 1 && bytes.last == slash { bytes.removeLast() }
        guard var end = bytes.lastIndex(of: slash) else { return "" }
        while end > 0 && bytes[end - 1] == slash { end -= 1 }
        return end == 0 ? "/" : String(decoding: bytes[..<end], as: UTF8.self)
    }

    private static func failure(_ operation: String, _ path: String) -> Failure {
        Failure(description: "\(operation) \(path): \(String(cString: strerror(errno)))")
    }
}
