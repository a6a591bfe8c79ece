// CJPEG and CPNG are imported for their `link` lines: the C target that calls them cannot carry them.
import CJPEG
import CPNG
import CThumbnail

/// Makes JPEG thumbnails of JPEG and PNG files (libjpeg-turbo, libpng): downscaled, EXIF
/// orientation applied, in bounded memory whatever the input's size.
public enum Thumbnailer {
    /// What a thumbnail came from and what it is.
    public struct Made: Sendable {
        public var jpeg: [UInt8]
        public var width: Int
        public var height: Int
        public var sourceWidth: Int
        public var sourceHeight: Int
        /// EXIF orientation of the source, 1...8.
        public var orientation: Int
    }

    /// Why no thumbnail could be made (the file is not an image we read, is corrupt, or too large).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String

        public init(description: String) { self.description = description }
    }

    /// Budget of libjpeg's own large allocations and of an interlaced PNG's frame, in bytes: a progressive
    /// JPEG needs its whole coefficient buffer (3 bytes a pixel in 4:2:0), so this admits ~50 Mpx ones.
    public static let memoryLimit = 160 << 20
    /// Largest source accepted, in pixels: a decompression bomb's declared size is refused before any pixel is
    /// decoded. 50 Mpx admits the 48 Mpx photos of today's phones and most panoramas; a PNG must decode every
    /// pixel (~12 ms a megapixel), so this keeps the worst file a sender can make at well under a second of CPU
    /// per thumbnail size (400 Mpx cost 5 s). Larger sources get the gallery's placeholder.
    public static let maxPixels: UInt64 = 50_000_000

    /// A thumbnail of the file at `path`, at most `maxSide` pixels on its longer side.
    public static func make(
        path: String, maxSide: Int, quality: Int = 82, memoryLimit: Int = memoryLimit, maxPixels: UInt64 = maxPixels
    ) -> Result<Made, Failure> {
        made { out, length, info in
            thumb_make(path, Int32(clamping: maxSide), memoryLimit, maxPixels, Int32(quality), &out, &length, &info)
        }
    }

    /// A thumbnail of the file open on `descriptor` (read from its start, left open), at most `maxSide` pixels on
    /// its longer side: what the media worker, which has no file system, makes.
    public static func make(
        descriptor: Int32, maxSide: Int, quality: Int = 82, memoryLimit: Int = memoryLimit,
        maxPixels: UInt64 = maxPixels
    ) -> Result<Made, Failure> {
        made { out, length, info in
            thumb_make_fd(
                descriptor, Int32(clamping: maxSide), memoryLimit, maxPixels, Int32(quality), &out, &length, &info)
        }
    }

    private static func made(
        _ make: (inout UnsafeMutablePointer<UInt8>?, inout Int, inout thumb_info) -> Int32
    ) -> Result<Made, Failure> {
        var info = thumb_info()
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = make(&out, &length, &info)
        guard status == 0, let out else {
            let message = withUnsafeBytes(of: &info.error) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            return .failure(Failure(description: message.isEmpty ? "cannot read the image" : message))
        }
        defer { thumb_free(out) }
        let jpeg = Array(UnsafeBufferPointer(start: out, count: length))
        return .success(
            Made(
                jpeg: jpeg, width: Int(info.width), height: Int(info.height), sourceWidth: Int(info.source_width),
                sourceHeight: Int(info.source_height), orientation: Int(info.orientation)))
    }

    /// The EXIF orientation in an APP1 payload (`Exif\0\0` and a TIFF header) or a bare TIFF
    /// block, 1 when there is none or it is malformed.
    public static func exifOrientation(_ bytes: [UInt8]) -> Int {
        Int(bytes.withUnsafeBufferPointer { thumb_exif_orientation($0.baseAddress, $0.count) })
    }
}
