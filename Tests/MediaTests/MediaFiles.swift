import CThumbnail
import Foundation

/// The committed samples (Samples/README.md says where each came from) and files made from them.
enum MediaFiles {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Samples")

    static func sample(_ name: String) -> String { samples.appendingPathComponent(name).path }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: sample(name))))
    }

    static func temp(_ name: String) -> String {
        NSTemporaryDirectory() + "couchlite-media-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-" + name
    }

    static func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = temp(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `bytes` with the 32-bit big-endian fields `offsets` after the first `box` box's type replaced by `values`.
    static func patch(_ bytes: [UInt8], box: String, at offsets: [Int], values: [UInt32], occurrence: Int = 0)
        -> [UInt8]?
    {
        let type = Array(box.utf8)
        var found = -1
        var seen = 0
        for index in 0..<(bytes.count - 4) where Array(bytes[index..<(index + 4)]) == type {
            if seen == occurrence {
                found = index + 4
                break
            }
            seen += 1
        }
        guard found >= 0 else { return nil }
        var patched = bytes
        for (offset, value) in zip(offsets, values) {
            for byte in 0..<4 { patched[found + offset + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * byte)) }
        }
        return patched
    }

    /// A 40 x 20 JPEG, its left half red and right half blue, with an EXIF block holding `orientation`.
    static func orientedJPEG(_ orientation: Int) throws -> String {
        var rgb = [UInt8](repeating: 0, count: 40 * 20 * 3)
        for y in 0..<20 {
            for x in 0..<40 { rgb[(y * 40 + x) * 3 + (x < 20 ? 0 : 2)] = 255 }
        }
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard thumb_encode_jpeg(rgb, 40, 20, 95, &out, &length) == 0, let out else {
            throw CocoaError(.fileWriteUnknown)
        }
        defer { thumb_free(out) }
        let jpeg = Array(UnsafeBufferPointer(start: out, count: length))
        // TIFF, big-endian: IFD0 with one entry, Orientation (SHORT).
        let tiff: [UInt8] =
            Array("MM".utf8) + [0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, UInt8(orientation), 0, 0]
            + [0, 0, 0, 0]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let segment: [UInt8] =
            [0xFF, 0xE1, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload
        return try write(Array(jpeg[0..<2]) + segment + Array(jpeg[2...]), "o\(orientation).jpg")
    }

    /// A decoded JPEG's size and its RGB pixels.
    static func decode(_ jpeg: [UInt8]) -> (width: Int, height: Int, rgb: [UInt8])? {
        var rgb: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0
        var height: Int32 = 0
        guard thumb_decode_jpeg_memory(jpeg, jpeg.count, &rgb, &width, &height) == 0, let rgb else { return nil }
        defer { thumb_free(rgb) }
        return (Int(width), Int(height), Array(UnsafeBufferPointer(start: rgb, count: Int(width * height * 3))))
    }

    /// The couchlite executable next to the test bundle (SwiftPM builds both into one directory).
    static func couchlite() -> String {
        if let explicit = ProcessInfo.processInfo.environment["COUCHLITE_BIN"] { return explicit }
        let me =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: me).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("couchlite").path),
            directory.path != "/"
        {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("couchlite").path
    }
}
