import CouchCrypto
import CouchServer
import Foundation

/// The photos and videos under a folder, found recursively, filtered by `--include`/`--exclude` globs
/// (matched against the path relative to the folder and against the file name). Whether a file is a photo or
/// video is decided by its bytes (`ContentSniffer`), never by its name: a photo without an extension is sent, and
/// a file named like one that is not (`notes.jpg`) is skipped and reported.
package struct PhotoScanner {
    package struct Photo {
        /// Absolute path.
        let path: String
        /// Path relative to the scanned folder.
        let relative: String
        let name: String
        let size: Int
        let modified: Date
        let contentType: String
    }

    /// What a scan found.
    package struct Scan {
        package var photos: [Photo] = []
        /// Files named like photos or videos whose bytes are not (relative paths, sorted): never sent.
        package var notMedia: [String] = []
    }

    /// Media types by lowercased extension, where they are more precise than the format's own (`dng` is TIFF to
    /// the sniffer, `image/x-adobe-dng` to a peer); a file's extension counts only when its bytes agree.
    static let contentTypes: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
        "heic": "image/heic", "heif": "image/heif", "tif": "image/tiff", "tiff": "image/tiff",
        "dng": "image/x-adobe-dng", "bmp": "image/bmp", "mov": "video/quicktime", "mp4": "video/mp4",
        "m4v": "video/x-m4v", "avi": "video/x-msvideo", "mkv": "video/x-matroska", "webm": "video/webm",
        "3gp": "video/3gpp", "mts": "video/mp2t",
    ]

    package var includes: [String] = []
    package var excludes: [String] = []

    package init() {}

    /// Every matching photo and video, sorted by relative path (so runs are repeatable).
    package func scan(_ root: String) throws -> [Photo] { try scanAll(root).photos }

    /// Every matching photo and video, and the files named like one that are not.
    package func scanAll(_ root: String) throws -> Scan {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw PushError.usage("\(root) is not a folder")
        }
        let base = URL(fileURLWithPath: root).standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(atPath: base) else { return Scan() }
        var found = Scan()
        while let relative = walker.nextObject() as? String {
            let path = base + "/" + relative
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                attributes[.type] as? FileAttributeType == .typeRegular
            else { continue }
            let name = (relative as NSString).lastPathComponent
            if name.hasPrefix(".") { continue }
            let ext = (name as NSString).pathExtension.lowercased()
            if !includes.isEmpty && !includes.contains(where: { Self.matches($0, relative) || Self.matches($0, name) })
            {
                continue
            }
            if excludes.contains(where: { Self.matches($0, relative) || Self.matches($0, name) }) { continue }
            guard let kind = ContentSniffer.sniff(ContentSniffer.prefix(ofFile: path)) else {
                // Named like a photo or video and not one: said, so a person knows why it did not go. Anything else
                // (sidecars, notes) is simply not media.
                if Self.contentTypes[ext] != nil { found.notMedia.append(relative) }
                continue
            }
            let named = Self.contentTypes[ext].flatMap { kind.extensions.contains(ext) ? $0 : nil }
            let contentType = named ?? kind.mediaType
            found.photos.append(
                Photo(
                    path: path, relative: relative, name: name, size: (attributes[.size] as? Int) ?? 0,
                    modified: (attributes[.modificationDate] as? Date) ?? Date(), contentType: contentType))
        }
        found.photos.sort { $0.relative < $1.relative }
        found.notMedia.sort()
        return found
    }

    /// Shell-style glob matching (`*`, `?`, `[…]`) as fnmatch(3) does it.
    static func matches(_ pattern: String, _ text: String) -> Bool {
        fnmatch(pattern, text, 0) == 0
    }

    /// The document id of a file: `photo-` and the first 32 hex digits of its SHA-256, so the same
    /// photo found twice (or sent again) is the same document.
    static func documentID(_ path: String) throws -> String {
        PhotoDocument.id(sha256Hex: try sha256Hex(path))
    }

    /// The SHA-256 of the file at `path` as hex, read a MiB at a time.
    static func sha256Hex(_ path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw PushError.local("cannot read \(path)") }
        defer { try? handle.close() }
        let digest = Digest(.sha256)
        while true {
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty { break }
            chunk.withUnsafeBytes { digest.update($0) }
        }
        return digest.finalize().hexString
    }
}

/// Why `couchlite push` stopped, with its exit status.
package enum PushError: Error, CustomStringConvertible {
    case usage(String)
    case local(String)
    case diskFull(String)

    package var description: String {
        switch self {
        case .usage(let text), .local(let text): text
        case .diskFull(let text): "the local disk is full: \(text)"
        }
    }
}
