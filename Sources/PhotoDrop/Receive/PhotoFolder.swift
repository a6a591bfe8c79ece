import CouchCrypto
import CouchServer
import Foundation

/// The `--out` folder: files appear in it atomically, under names that never replace another file.
///
/// A photo is written to a hidden temporary file (`.couchlite-<md5>.part`), flushed with `fsync`, given its
/// modification time, and then linked under its final name (`link` fails instead of replacing a file that is
/// there) and the directory flushed, so a crash never leaves half a photo under a final name. The temporary
/// files and the names recorded in `ExportState` are a journal: `recover` finishes or removes them on the next
/// start.
struct PhotoFolder {
    let path: String

    static let partPrefix = ".couchlite-"
    static let partSuffix = ".part"

    init(path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func partPath(_ digest: String) -> String { path + "/" + PhotoFolder.partPrefix + digest + PhotoFolder.partSuffix }

    /// Whether any directory entry (file, link, directory) has this name.
    func exists(_ name: String) -> Bool {
        var info = stat()
        return lstat(path + "/" + name, &info) == 0
    }

    /// The first of `name`, `name (2)`, … that is free, from `counter` on.
    func freeName(_ name: String, from counter: Int = 1) -> (name: String, counter: Int) {
        var counter = counter
        while true {
            let candidate = PhotoFileName.numbered(name, counter)
            if !exists(candidate) { return (candidate, counter) }
            counter += 1
        }
    }

    /// Streams `chunks` into a temporary file, flushes it, sets its modification time and names it after the
    /// md5 of its bytes (`partPath(md5)`), ready for `publish`.
    /// - Parameter key: names the file while it is being written (the blob key: one writer per key).
    /// - Returns: the md5 (hex) and length of what was written.
    func writePart(
        _ key: String, mtime: Double?, _ chunks: (_ write: ([UInt8]) throws -> Void) throws -> Void
    ) throws -> (md5: String, length: Int) {
        let part = path + "/" + PhotoFolder.partPrefix + "writing-" + key
        unlink(part)
        let fd = open(part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw ExportError.io("open", part, errno) }
        var renamed = false
        defer {
            close(fd)
            // A failed write (a full disk) leaves no partial file behind.
            if !renamed { unlink(part) }
        }
        // A photo for its owner's other programs, whatever umask the server runs under (owner-only for its data).
        fchmod(fd, 0o644)
        let md5 = Digest(.md5)
        var length = 0
        try chunks { bytes in
            md5.update(bytes)
            var done = 0
            while done < bytes.count {
                let wrote = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + done }, bytes.count - done) }
                if wrote < 0 {
                    if errno == EINTR { continue }
                    throw ExportError.io("write", part, errno)
                }
                done += wrote
            }
            length += bytes.count
        }
        if let mtime {
            let whole = mtime.rounded(.down)
            let nanos = Int((mtime - whole) * 1e9)
            var times = [
                timespec(tv_sec: Int(whole), tv_nsec: nanos), timespec(tv_sec: Int(whole), tv_nsec: nanos),
            ]
            guard futimens(fd, &times) == 0 else { throw ExportError.io("futimens", part, errno) }
        }
        guard fsync(fd) == 0 else { throw ExportError.io("fsync", part, errno) }
        let digest = md5.finalize().hexString
        guard rename(part, partPath(digest)) == 0 else { throw ExportError.io("rename", part, errno) }
        renamed = true
        return (digest, length)
    }

    /// Gives the temporary file of `digest` its final name (without replacing anything) and removes it.
    /// - Returns: false when `name` is taken (nothing changed).
    func publish(_ digest: String, as name: String) throws -> Bool {
        let part = partPath(digest)
        if link(part, path + "/" + name) != 0 {
            if errno == EEXIST { return false }
            throw ExportError.io("link", name, errno)
        }
        unlink(part)
        try syncDirectory()
        return true
    }

    func discardPart(_ digest: String) {
        unlink(partPath(digest))
    }

    func syncDirectory() throws {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw ExportError.io("open", path, errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw ExportError.io("fsync", path, errno) }
    }

    /// Finishes exports a crash interrupted: a temporary file whose md5 `state` records under a name not yet
    /// in the folder is published; every other temporary file is removed (its export starts again).
    func recover(_ state: ExportState) throws {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for entry in entries where entry.hasPrefix(PhotoFolder.partPrefix) {
            guard entry.hasSuffix(PhotoFolder.partSuffix) else {
                unlink(path + "/" + entry)  // cut while being written: its export starts again
                continue
            }
            let digest = String(entry.dropFirst(PhotoFolder.partPrefix.count).dropLast(PhotoFolder.partSuffix.count))
            if let name = try state.fileName(md5: digest), !exists(name) {
                _ = try publish(digest, as: name)
            } else {
                discardPart(digest)
            }
        }
        try syncDirectory()
    }
}

/// A failure while exporting; the exporter logs it and tries the document again.
enum ExportError: Error, CustomStringConvertible {
    case io(String, String, Int32)
    case unreadable(String)

    /// Whether the folder's disk (or its quota) is full.
    var isDiskFull: Bool {
        if case .io(_, _, let code) = self { return code == ENOSPC || code == EDQUOT }
        return false
    }

    var description: String {
        switch self {
        case .io(let operation, let path, let code): "\(operation) \(path): \(String(cString: strerror(code)))"
        case .unreadable(let reason): reason
        }
    }
}
