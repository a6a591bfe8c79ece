import Foundation
import MediaDecoding
import MediaSandbox
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What each stored photo or video says about itself (`MediaInfo`: kind, size, duration, date taken, camera,
/// GPS), read once per content digest by the media sandbox and kept in memory and on disk
/// (`directory/ab/<key>.json`, or `.bad` for a file the sandbox refused), as thumbnails are.
final class MediaCatalog: Sendable {
    let directory: String
    let sandbox: MediaSandbox
    /// Most entries kept in memory; past it the oldest half is dropped (the disk copy remains).
    static let memoryEntries = 100_000
    private let memory = Mutex<[String: MediaInfo?]>([:])

    init(directory: String, sandbox: MediaSandbox) {
        self.directory = directory
        self.sandbox = sandbox
    }

    /// The facts of the blob whose digest is `key`, probing the file `source()` names if they are not known yet;
    /// nil for a file the sandbox refused (not media, corrupt, beyond the limits, or fatal to its worker).
    func info(key: String, source: () throws -> String) throws -> MediaInfo? {
        if let known = memory.withLock({ $0[key] }) { return known }
        let base = directory + "/" + key.prefix(2) + "/" + key
        let found: MediaInfo?
        if let data = FileManager.default.contents(atPath: base + ".json"),
            let info = try? JSONDecoder().decode(MediaInfo.self, from: data)
        {
            found = info
        } else if access(base + ".bad", F_OK) == 0 {
            found = nil
        } else {
            found = try probe(source(), base: base)
        }
        remember(key, found)
        return found
    }

    /// Only what is already known, without probing (nil: not known, or known unreadable).
    func known(key: String) -> MediaInfo? { memory.withLock { $0[key] ?? nil } }

    private func probe(_ path: String, base: String) throws -> MediaInfo? {
        let result = sandbox.probe(path: path)
        try FileManager.default.createDirectory(
            atPath: (base as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let temp = base + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let info = try? result.get()
        let bytes = info.flatMap { try? JSONEncoder().encode($0) } ?? Data()
        if FileManager.default.createFile(atPath: temp, contents: bytes) {
            if rename(temp, base + (info == nil ? ".bad" : ".json")) != 0 { unlink(temp) }
        }
        return info
    }

    private func remember(_ key: String, _ info: MediaInfo?) {
        memory.withLock { memory in
            if memory.count >= Self.memoryEntries {
                for key in memory.keys.prefix(Self.memoryEntries / 2) { memory[key] = nil }
            }
            memory[key] = .some(info)
        }
    }
}
