// CExif, CFFmpeg, CHeif and CWebP are imported for their `link` lines: the C target that calls them cannot carry
// them.
import CExif
import CFFmpeg
import CHeif
import CMediaDecode
import CWebP
import Glibc
import Thumbnails

/// Reads and renders photos and videos in this process: JPEG and PNG with the thumbnailer (libjpeg-turbo,
/// libpng), HEIF/AVIF with libheif, video, GIF, TIFF and BMP with FFmpeg, WebP with libwebp, EXIF with libexif. Only the media worker calls it
/// (`MediaSandbox`): the server never runs these parsers on a stranger's bytes itself.
public enum MediaDecoder {
    /// What a file may declare before anything is decoded: a decompression bomb is refused by its header.
    public struct Limits: Sendable, Codable {
        /// Largest still image (50 Mpx: today's 48 Mpx phone photos, most panoramas).
        public var maxPixels: UInt64 = Thumbnailer.maxPixels
        /// Largest video frame: 8K UHD, the most any phone records.
        public var maxVideoPixels: UInt64 = 7680 * 4320
        /// Largest declared frame size times length: 8K for 10 minutes, 4K for 40, 1080p for 2.7 hours.
        public var maxVideoPixelSeconds: Double = 7680 * 4320 * 600

        public init() {}

        var c: media_limits {
            media_limits(
                max_pixels: maxPixels, max_video_pixels: maxVideoPixels,
                max_video_pixel_seconds: maxVideoPixelSeconds)
        }
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// What the file at `path` says about itself (tests and tools: the media worker reads by descriptor).
    public static func probe(path: String, limits: Limits = Limits()) -> Result<MediaInfo, Failure> {
        withDescriptor(path) { probe(descriptor: $0, limits: limits) }
    }

    /// What the file open on `descriptor` says about itself (read by offset; left open).
    public static func probe(descriptor: Int32, limits: Limits = Limits()) -> Result<MediaInfo, Failure> {
        var info = media_info()
        var cLimits = limits.c
        guard media_probe(descriptor, &cLimits, &info) == 0 else { return .failure(failure(&info)) }
        return .success(mediaInfo(&info))
    }

    /// A JPEG of the file at `path`, at most `maxSide` pixels on its longer side, oriented as it is displayed.
    public static func render(path: String, maxSide: Int, quality: Int = 82, limits: Limits = Limits())
        -> Result<[UInt8], Failure>
    {
        withDescriptor(path) { render(descriptor: $0, maxSide: maxSide, quality: quality, limits: limits) }
    }

    /// A JPEG of the file open on `descriptor` (read by offset; left open), at most `maxSide` pixels on its longer
    /// side, oriented as it is displayed.
    public static func render(descriptor: Int32, maxSide: Int, quality: Int = 82, limits: Limits = Limits())
        -> Result<[UInt8], Failure>
    {
        // JPEG and PNG are the thumbnailer's, which decodes in bounded memory row by row.
        if media_container(descriptor) == 1 {
            return Thumbnailer.make(
                descriptor: descriptor, maxSide: maxSide, quality: quality, maxPixels: limits.maxPixels
            )
            .map(\.jpeg).mapError { Failure(description: $0.description) }
        }
        var info = media_info()
        var cLimits = limits.c
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard media_render(descriptor, Int32(clamping: maxSide), Int32(quality), &cLimits, &out, &length, &info) == 0,
            let out
        else { return .failure(failure(&info)) }
        defer { media_free(out) }
        return .success(Array(UnsafeBufferPointer(start: out, count: length)))
    }

    /// Loads what the decoders load from disk (libheif's codec plugins): the media worker calls it once, before it
    /// gives up its file system. False when libheif cannot start.
    public static func prepare() -> Bool { media_prepare() == 0 }

    private static func withDescriptor<T>(_ path: String, _ body: (Int32) -> Result<T, Failure>) -> Result<T, Failure> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(Failure(description: "cannot open the file")) }
        defer { close(descriptor) }
        return body(descriptor)
    }

    private static func failure(_ info: inout media_info) -> Failure {
        let message = text(&info.error)
        return Failure(description: message.isEmpty ? "cannot read the file" : message)
    }

    private static func text<T>(_ tuple: inout T) -> String {
        withUnsafeBytes(of: &tuple) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
    }

    private static func mediaInfo(_ c: inout media_info) -> MediaInfo {
        var info = MediaInfo(kind: c.kind == 2 ? .video : .photo, format: text(&c.format))
        info.width = c.width > 0 ? Int(c.width) : nil
        info.height = c.height > 0 ? Int(c.height) : nil
        info.duration = c.kind == 2 && c.duration > 0 ? c.duration : nil
        info.takenLocal = nonEmpty(text(&c.taken))
        info.offset = info.takenLocal == nil ? nil : nonEmpty(text(&c.offset))
        info.make = nonEmpty(text(&c.make))
        info.model = nonEmpty(text(&c.model))
        if c.has_gps != 0 {
            info.latitude = c.latitude
            info.longitude = c.longitude
        }
        info.contentID = nonEmpty(text(&c.content_id))
        return info
    }

    private static func nonEmpty(_ text: String) -> String? { text.isEmpty ? nil : text }
}
