import CZlib
import CouchServer

/// Writes 8-bit grayscale PNG images (RFC 2083): signature, `IHDR`, one zlib `IDAT`, `IEND`.
///
/// Only what the QR code needs: no palette, no interlacing, filter type 0 (None) on every row, which
/// zlib compresses well enough for an image of two colours.
public enum PNGEncoder {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// - Parameter pixels: `width * height` gray levels, row-major (0 black, 255 white).
    public static func grayscale(width: Int, height: Int, pixels: [UInt8]) -> [UInt8] {
        precondition(width > 0 && height > 0 && pixels.count == width * height, "pixels must fill the image")
        var header = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [8, 0, 0, 0, 0]  // bit depth 8, colour type 0 (gray), deflate, filter method 0, no interlace
        var raw = [UInt8]()
        raw.reserveCapacity((width + 1) * height)
        for row in 0..<height {
            raw.append(0)  // filter type None
            raw += pixels[(row * width)..<((row + 1) * width)]
        }
        return signature + chunk("IHDR", header) + chunk("IDAT", deflate(raw)) + chunk("IEND", [])
    }

    /// One chunk: length, type, data, CRC-32 of type and data.
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        let crc = typed.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count)) }
        return bigEndian(UInt32(data.count)) + typed + bigEndian(UInt32(truncatingIfNeeded: crc))
    }

    /// A zlib stream (not gzip: PNG wants RFC 1950 framing) of `bytes`.
    static func deflate(_ bytes: [UInt8]) -> [UInt8] {
        var capacity = compressBound(uLong(bytes.count))
        var out = [UInt8](repeating: 0, count: Int(capacity))
        let status = out.withUnsafeMutableBufferPointer { target in
            bytes.withUnsafeBufferPointer { source in
                compress2(target.baseAddress, &capacity, source.baseAddress, uLong(source.count), Z_BEST_COMPRESSION)
            }
        }
        // compressBound is an upper bound, so compress2 cannot run out of room; it fails only without memory.
        precondition(status == Z_OK, "zlib compress2 failed: \(status)")
        return Array(out.prefix(Int(capacity)))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
