import CouchServer
import Foundation

/// Recognises photo and video formats from their first bytes, for attachments whose name and content type
/// say nothing (PhotoDrop sends every photo as `photo`, `application/octet-stream`), and for names that lie (a
/// text file renamed `notes.jpg`). The one answer to "photo or video?" (issue 36, item 3): `receive`'s folder,
/// `couchlite push` (what it sends and what it skips) and the gallery's uploads (what they refuse) all ask it,
/// never the name.
public enum ContentSniffer {
    /// A recognised format.
    public struct Kind: Sendable, Equatable {
        /// File name extension, without the dot (`jpg`).
        public let fileExtension: String
        /// Other extensions meaning the same format, kept when a name already has one (`jpeg`).
        public let aliases: [String]
        public let mediaType: String

        public static let jpeg = Kind(fileExtension: "jpg", aliases: ["jpeg", "jpe", "jfif"], mediaType: "image/jpeg")
        public static let png = Kind(fileExtension: "png", aliases: [], mediaType: "image/png")
        public static let gif = Kind(fileExtension: "gif", aliases: [], mediaType: "image/gif")
        public static let webp = Kind(fileExtension: "webp", aliases: [], mediaType: "image/webp")
        public static let heic = Kind(fileExtension: "heic", aliases: ["heif"], mediaType: "image/heic")
        public static let heif = Kind(fileExtension: "heif", aliases: ["heic"], mediaType: "image/heif")
        public static let avif = Kind(fileExtension: "avif", aliases: [], mediaType: "image/avif")
        public static let tiff = Kind(
            fileExtension: "tiff", aliases: ["tif", "dng", "nef", "cr2", "arw"], mediaType: "image/tiff")
        public static let bmp = Kind(fileExtension: "bmp", aliases: [], mediaType: "image/bmp")
        public static let mp4 = Kind(fileExtension: "mp4", aliases: ["m4v"], mediaType: "video/mp4")
        public static let mov = Kind(fileExtension: "mov", aliases: ["qt"], mediaType: "video/quicktime")
        public static let threeGP = Kind(fileExtension: "3gp", aliases: ["3g2"], mediaType: "video/3gpp")
        public static let avi = Kind(fileExtension: "avi", aliases: [], mediaType: "video/x-msvideo")
        /// Matroska and WebM (the same EBML container; the sniffer does not read the doctype).
        public static let matroska = Kind(
            fileExtension: "mkv", aliases: ["webm", "mka"], mediaType: "video/x-matroska")
        /// MPEG transport streams in 192-byte packets (AVCHD cameras' `.mts`, Blu-ray's `.m2ts`).
        public static let m2ts = Kind(fileExtension: "mts", aliases: ["m2ts", "m2t"], mediaType: "video/mp2t")

        /// Every format `sniff` recognises.
        public static let all: [Kind] = [
            .jpeg, .png, .gif, .webp, .heic, .heif, .avif, .tiff, .bmp, .mp4, .mov, .threeGP, .avi, .matroska, .m2ts,
        ]

        public var extensions: [String] { [fileExtension] + aliases }
    }

    /// How many leading bytes `sniff` looks at (two 192-byte transport stream packets and a byte).
    public static let prefixBytes = 400

    /// The format of content starting with `prefix`, or nil when it is none of the known ones.
    public static func sniff(_ prefix: some Collection<UInt8>) -> Kind? {
        let b = Array(prefix.prefix(prefixBytes))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + magic.count && Array(b[offset..<(offset + magic.count)]) == magic
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        if starts(Array("RIFF".utf8)) && starts(Array("AVI ".utf8), at: 8) { return .avi }
        if starts([0x1A, 0x45, 0xDF, 0xA3]) { return .matroska }
        // A 4-byte arrival time, then the sync byte, in three packets in a row: one by chance is 1 in 256.
        if b.count >= 2 * 192 + 5, b[4] == 0x47, b[192 + 4] == 0x47, b[2 * 192 + 4] == 0x47 { return .m2ts }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts(Array("ftyp".utf8), at: 4), b.count >= 12 {
            return isoMedia(brand: String(decoding: b[8..<12], as: UTF8.self))
        }
        // QuickTime files from before `ftyp` start with another top-level atom.
        for atom in ["moov", "mdat", "wide", "free", "skip", "pnot"] where starts(Array(atom.utf8), at: 4) {
            return .mov
        }
        if starts(Array("BM".utf8)) && b.count >= 14 && b[6] == 0 && b[7] == 0 && b[8] == 0 && b[9] == 0 {
            return .bmp  // "BM" alone is too weak; the four reserved header bytes are zero
        }
        return nil
    }

    /// ISO base media files (HEIF, AVIF, MP4, QuickTime, 3GPP) by their major brand.
    static func isoMedia(brand: String) -> Kind? {
        switch brand {
        case "heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs": .heic
        case "mif1", "msf1": .heif
        case "avif", "avis": .avif
        case "qt  ": .mov
        case "3gp4", "3gp5", "3gp6", "3g2a", "3gp7": .threeGP
        case "isom", "iso2", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "M4V ", "dash", "MSNV", "XAVC", "mmp4":
            .mp4
        default: nil
        }
    }

    /// The format a content type names, for content the sniffer does not know.
    public static func kind(mediaType: String) -> Kind? {
        let bare = mediaType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let named: [Kind] = [.jpeg, .png, .gif, .webp, .heic, .heif, .avif, .tiff, .bmp, .mp4, .mov, .threeGP]
        return named.first { $0.mediaType == bare } ?? (bare == "image/jpg" ? .jpeg : nil)
    }

    /// The first `prefixBytes` bytes of content read in chunks, for `sniff` once they are in.
    public struct Prefix: Sendable {
        public private(set) var bytes: [UInt8] = []

        public init() {}

        public mutating func take(_ chunk: UnsafeRawBufferPointer) {
            guard bytes.count < ContentSniffer.prefixBytes else { return }
            bytes.append(contentsOf: chunk.prefix(ContentSniffer.prefixBytes - bytes.count))
        }
    }

    /// The first bytes of a file (at most `prefixBytes`); empty when it cannot be read.
    public static func prefix(ofFile path: String) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        return Array((try? handle.read(upToCount: prefixBytes)) ?? Data())
    }

    /// Why a file that is not media is refused, with its name.
    public static func notMedia(_ name: String) -> String {
        "\(name) is not a photo or video: its bytes are none of the formats couchlite knows (JPEG, PNG, GIF, WebP, "
            + "HEIC, AVIF, TIFF, BMP, MP4, MOV, 3GP, AVI, Matroska/WebM, MPEG-TS), whatever its name says"
    }
}
