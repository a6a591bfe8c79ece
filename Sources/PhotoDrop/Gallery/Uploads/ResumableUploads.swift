import CouchCrypto
import CouchServer
import CouchWire
import Foundation
import Synchronization

/// The gallery's resumable uploads: a file promised with its length and SHA-256 is received in as many appends as
/// the connection needs, each continuing at the byte the server has, and becomes a photo only once all of it is
/// there and its digest matches. Until then it is a pair of owner-only files under `directory` (`<id>.json`, the
/// `PartialUpload`, and `<id>.part`, the bytes received so far, whose size is the offset), never a document.
///
/// Bounded: each owner has at most `Limits.perOwner` unfinished uploads in a database, the server
/// `Limits.total`, and each expires `Limits.maxAge` after it was created or `Limits.maxIdle` after its last byte
/// arrived (an abandoned promise: swept whenever one is created or looked up, never while an append is running).
/// One append or completion at a time per upload; a second is told so (`Busy`), not queued.
///
/// An owner is a user, but for `couchlite receive`'s drop credentials, which every sender of a session shares, it
/// is one sender (`owner(of:from:)`): eight 1-byte promises of one phone took the one account's eight slots and
/// failed every other phone's push of a large file (issue 35).
final class ResumableUploads: Sendable {
    struct Limits: Sendable {
        var perOwner = 8
        var total = 256
        var maxAge = 24 * 60 * 60
        /// Seconds without a byte after which an upload is abandoned (an hour: a phone that left the Wi-Fi for a
        /// while still resumes; one that promised and never sent frees its slot).
        var maxIdle = 60 * 60
        /// The largest file one may promise (1 TiB): a length is only a promise, but it should be a plausible one.
        var maxLength = 1 << 40
    }

    /// An append that does not start at the byte the server has (overlapping, or leaving a gap).
    struct OffsetMismatch: Error, Equatable {
        let offset: Int
    }

    /// Another append or completion of the same upload is in progress.
    struct Busy: Error {}

    let directory: String
    let limits: Limits
    private let now: @Sendable () -> Int
    private let busy = Mutex(Set<String>())
    /// When each live upload last received bytes (or was created), for `maxIdle`. In memory only: after a restart
    /// the idle time of an upload found on disk starts when it is first looked at. Pruned by every sweep, so
    /// it never holds more than the live uploads (`Limits.total`).
    private let touched = Mutex([String: Int]())
    /// Serializes creations, so that two racing ones cannot both pass the count limits.
    private let creating = Mutex(())

    init(
        directory: String, limits: Limits = Limits(),
        now: @escaping @Sendable () -> Int = { Int(Date().timeIntervalSince1970) }
    ) {
        self.directory = directory
        self.limits = limits
        self.now = now
    }

    /// Who owns an upload: the user's name, or `anonymous` in a database anyone may write to (whose ids are
    /// still unguessable). The drop credentials are shared by every sender of a `receive` session, so their
    /// uploads are the sender's: the account and the address the request came from (a phone keeps its address on
    /// the Wi-Fi, so it resumes its own uploads over a new connection, and its slots are its own).
    static func owner(of user: UserContext, from address: String?) -> String {
        guard let name = user.name else { return "anonymous" }
        guard user.scope != nil else { return "user:" + name.description }
        return "drop:" + name.description + "@" + (address ?? "-")
    }

    /// Starts an upload, or finds the one this owner already started for the same bytes into the same database
    /// (the person picked the same file again): `resumed` then, with the offset to continue at.
    func create(
        owner: String, database: String, name: String, contentType: String, modified: Int, length: Int,
        sha256: String, revision: (rev: String, fields: JSONObject)? = nil
    ) throws -> (upload: PartialUpload, offset: Int, resumed: Bool) {
        guard length >= 0, length <= limits.maxLength else {
            throw CouchError.badRequest("Upload-Length must be a number of bytes between 0 and \(limits.maxLength)")
        }
        guard PartialUpload.isValidDigest(sha256) else {
            throw CouchError.badRequest("sha256 must be the file's SHA-256 as 64 lowercase hex digits")
        }
        return try creating.withLock { _ in
            try PrivateFile.createDirectory(directory)
            let live = sweep()
            if let same = live.first(where: {
                $0.owner.utf8Equals(owner) && $0.database.utf8Equals(database) && $0.sha256 == sha256
                    && $0.length == length
            }) {
                return (same, offset(of: same.id), true)
            }
            guard
                live.filter({ $0.owner.utf8Equals(owner) && $0.database.utf8Equals(database) }).count < limits.perOwner
            else {
                throw CouchError.forbidden(
                    "Too many unfinished uploads (\(limits.perOwner)): finish or cancel one, or wait for it to expire.")
            }
            guard live.count < limits.total else {
                throw CouchError.serviceUnavailable("Too many unfinished uploads on this server; try again later.")
            }
            var upload = PartialUpload(
                id: Secrets.randomBytes(16).hexString, owner: owner, database: database, name: name,
                contentType: contentType, modified: modified, length: length, sha256: sha256, created: now())
            upload.revision = revision
            touch(upload.id)
            let fd = open(partPath(upload.id), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw CouchError.internalError("cannot create upload: \(errnoText())") }
            close(fd)
            do {
                try PrivateFile.write(Array(upload.json.serialized()), to: metaPath(upload.id))
            } catch {
                unlink(partPath(upload.id))
                throw CouchError.internalError("cannot record upload: \(error)")
            }
            return (upload, 0, false)
        }
    }

    /// The upload `id` and the bytes it has, if `owner` started it in `database` and it has not expired; every
    /// other case (someone else's id, another database, a malformed id) is the same 404.
    func lookup(_ id: String, owner: String, database: String) throws -> (upload: PartialUpload, offset: Int) {
        guard PartialUpload.isValidID(id), let upload = record(id), upload.owner.utf8Equals(owner),
            upload.database.utf8Equals(database)
        else { throw CouchError.notFound("missing") }
        guard !expired(upload) else {
            remove(id)
            throw CouchError.notFound("missing")
        }
        return (upload, offset(of: id))
    }

    /// Runs `work` as the only append or completion of `id` at this moment.
    /// - Throws: `Busy` when another is running.
    @discardableResult
    func exclusively<T>(_ id: String, _ work: () throws -> T) throws -> T {
        guard busy.withLock({ $0.insert(id).inserted }) else { throw Busy() }
        defer { _ = busy.withLock { $0.remove(id) } }
        return try work()
    }

    /// Appends what `body` hands over at `offset`, which must be the bytes the server has. Every byte received is
    /// kept, also when the body stops short (the connection was cut): the next append continues after it.
    /// - Parameter declared: The body's Content-Length, if it has one: refused before reading when it would go past
    ///   the promised length.
    /// - Returns: The offset after the append.
    /// - Throws: `OffsetMismatch`, 413 past the promised length, and whatever `body` throws.
    func append(
        _ upload: PartialUpload, at offset: Int, declared: Int?,
        _ body: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws -> Int {
        let current = self.offset(of: upload.id)
        guard offset == current else { throw OffsetMismatch(offset: current) }
        let room = upload.length - current
        if let declared, declared > room {
            throw CouchError.tooLarge("The body goes past the upload's length (\(room) bytes are left)")
        }
        let fd = open(partPath(upload.id), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw CouchError.notFound("missing") }
        defer { close(fd) }
        var written = current
        try body { chunk in
            guard chunk.count <= upload.length - written else {
                throw CouchError.tooLarge("The body goes past the upload's length (\(room) bytes were left)")
            }
            try Self.writeAll(fd, chunk)
            written += chunk.count
            touch(upload.id)
        }
        return written
    }

    /// Hands the complete file to `sink` while hashing it, and checks it is the file promised. A file whose
    /// digest is wrong is removed: its bytes can never become the photo it claimed to be.
    /// - Throws: 400 `bad_request` for a wrong digest, 409 when the upload is not complete yet.
    func finish(_ upload: PartialUpload, into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard offset(of: upload.id) == upload.length else { throw CouchError.conflict }
        let fd = open(partPath(upload.id), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw CouchError.notFound("missing") }
        defer { close(fd) }
        let sha256 = Digest(.sha256)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var total = 0
        while total < upload.length {
            let count = read(fd, buffer.baseAddress, min(buffer.count, upload.length - total))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw CouchError.internalError("upload file shrank: \(errnoText())") }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            sha256.update(chunk)
            try sink(chunk)
            total += count
        }
        guard sha256.finalize().hexString == upload.sha256 else {
            remove(upload.id)
            throw CouchError.badRequest("The file received does not have the SHA-256 it was announced with")
        }
    }

    /// Forgets an upload and deletes its bytes.
    func remove(_ id: String) {
        guard PartialUpload.isValidID(id) else { return }
        unlink(metaPath(id))
        unlink(partPath(id))
        _ = touched.withLock { $0.removeValue(forKey: id) }
    }

    /// Deletes expired uploads and stray files (a `.part` without its record, a damaged record).
    /// - Returns: The uploads that remain.
    @discardableResult
    func sweep() -> [PartialUpload] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var live: [PartialUpload] = []
        var ids = Set<String>()
        for name in names where name.hasSuffix(".json") {
            let id = String(name.dropLast(5))
            guard PartialUpload.isValidID(id), let upload = record(id), upload.id == id else {
                remove(id)
                continue
            }
            // An upload being appended to now is not abandoned, however long its append takes.
            if expired(upload) && !busy.withLock({ $0.contains(id) }) {
                remove(id)
                continue
            }
            live.append(upload)
            ids.insert(id)
        }
        touched.withLock { touched in touched = touched.filter { ids.contains($0.key) } }
        for name in names where name.hasSuffix(".part") && !ids.contains(String(name.dropLast(5))) {
            // Created a moment ago by a creation that has not written its record yet is impossible: creations
            // hold `creating`, and so does every sweep that runs from one.
            unlink(directory + "/" + name)
        }
        return live
    }

    /// The bytes received so far (the `.part` file's size).
    func offset(of id: String) -> Int {
        var info = stat()
        guard stat(partPath(id), &info) == 0 else { return 0 }
        return Int(info.st_size)
    }

    /// Whether the upload is past `maxAge`, or has had no byte for `maxIdle`.
    private func expired(_ upload: PartialUpload) -> Bool {
        let now = now()
        let last = touched.withLock { touched -> Int in
            if let last = touched[upload.id] { return last }
            // First seen since the server started: its idle time starts now.
            touched[upload.id] = now
            return now
        }
        return now &- upload.created >= limits.maxAge || now &- max(last, upload.created) >= limits.maxIdle
    }

    /// Records that the upload was created or received bytes just now.
    private func touch(_ id: String) {
        let now = now()
        touched.withLock { $0[id] = now }
    }

    private func record(_ id: String) -> PartialUpload? {
        guard let data = FileManager.default.contents(atPath: metaPath(id)),
            let json = try? JSON.parse(Array(data))
        else { return nil }
        return PartialUpload(json: json)
    }

    private func metaPath(_ id: String) -> String { directory + "/" + id + ".json" }
    private func partPath(_ id: String) -> String { directory + "/" + id + ".part" }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let count = write(fd, bytes.baseAddress.map { $0 + done }, bytes.count - done)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                if errno == ENOSPC { throw CouchError.insufficientStorage }
                throw CouchError.internalError("upload write failed: \(errnoText())")
            }
            done += count
        }
    }
}

private func errnoText() -> String { String(cString: strerror(errno)) }
