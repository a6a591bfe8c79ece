import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Thumbnails on disk, keyed by the source's content digest and the size asked for, each made at
/// most once: concurrent requests for one key wait for the first to finish, and a source that
/// cannot be read is remembered as such (a `.bad` marker) so it is not decoded again.
///
/// Layout: `directory/ab/<key>-<size>.jpg` (or `.bad`), written to a temp file and renamed in,
/// so a reader never sees half a thumbnail. Thumbnails are derived data: nothing is fsynced.
public final class ThumbnailCache: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The thumbnail is in this file.
        case file(String)
        /// The source is not an image that can be read: show a placeholder.
        case placeholder
    }

    /// Makes the JPEG of the file at a path, at most a size on its longer side (the server's: in the media
    /// sandbox's worker processes; tests': `Thumbnailer` in process).
    public typealias Render = @Sendable (_ path: String, _ maxSide: Int) -> Result<[UInt8], Thumbnailer.Failure>

    public let directory: String
    private let render: Render
    /// Per-key exclusion, striped: the same key always takes the same lock.
    private let stripes: [NSLock]
    /// Bounds how many decodes run at once (each holds up to `Thumbnailer.memoryLimit`).
    private let decoders: DispatchSemaphore
    private let counters = Mutex<(made: Int, failed: Int)>((0, 0))

    /// How many thumbnails were made and how many sources failed, since this cache was opened.
    public var generated: (made: Int, failed: Int) { counters.withLock { $0 } }

    public init(
        directory: String, concurrentDecodes: Int = max(1, ProcessInfo.processInfo.activeProcessorCount),
        render: @escaping Render = { path, size in Thumbnailer.make(path: path, maxSide: size).map(\.jpeg) }
    ) {
        self.directory = directory
        self.render = render
        stripes = (0..<64).map { _ in NSLock() }
        decoders = DispatchSemaphore(value: concurrentDecodes)
    }

    /// A key is the hex digest of the source's bytes (32 to 128 lowercase hex digits).
    public static func isValidKey(_ key: String) -> Bool {
        (32...128).contains(key.utf8.count)
            && key.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The thumbnail of the source whose digest is `key` at `size` pixels, made from the file
    /// `source()` names if it is not cached yet.
    public func thumbnail(key: String, size: Int, source: () throws -> String) throws -> Outcome {
        guard Self.isValidKey(key), size > 0 else { throw Thumbnailer.Failure(description: "bad thumbnail key") }
        let fan = directory + "/" + key.prefix(2)
        let base = fan + "/" + key + "-" + String(size)
        if access(base + ".jpg", F_OK) == 0 { return .file(base + ".jpg") }
        if access(base + ".bad", F_OK) == 0 { return .placeholder }
        var hasher = Hasher()
        hasher.combine(key)
        hasher.combine(size)
        let stripe = stripes[Int(UInt(bitPattern: hasher.finalize()) % UInt(stripes.count))]
        return try stripe.withLock { () throws -> Outcome in
            // Another request may have made it while this one waited.
            if access(base + ".jpg", F_OK) == 0 { return .file(base + ".jpg") }
            if access(base + ".bad", F_OK) == 0 { return .placeholder }
            let path = try source()
            decoders.wait()
            let result = render(path, size)
            decoders.signal()
            try FileManager.default.createDirectory(atPath: fan, withIntermediateDirectories: true)
            switch result {
            case .success(let made):
                try Self.writeAtomically(made, to: base + ".jpg")
                counters.withLock { $0.made += 1 }
                return .file(base + ".jpg")
            case .failure:
                try Self.writeAtomically([], to: base + ".bad")
                counters.withLock { $0.failed += 1 }
                return .placeholder
            }
        }
    }

    private static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        let temp = path + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        guard FileManager.default.createFile(atPath: temp, contents: Data(bytes)) else {
            throw Thumbnailer.Failure(description: "cannot write \(temp)")
        }
        guard rename(temp, path) == 0 else {
            unlink(temp)
            throw Thumbnailer.Failure(description: "cannot rename \(temp)")
        }
    }
}
