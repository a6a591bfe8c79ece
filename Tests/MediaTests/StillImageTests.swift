import Foundation
import MediaDecoding
import MediaSandbox
import Testing

/// GIF, WebP (still and animated), TIFF and BMP, the formats the drop accepts besides JPEG, PNG, HEIF and video
/// (issue 37, item 3): probed as photos and rendered by the same sandboxed decoder, the first frame of an animation,
/// transparency over white. GIF, TIFF and BMP through FFmpeg (each with only its own demuxer), WebP through libwebp.
@Suite struct StillImageTests {
    private func rendered(_ name: String, maxSide: Int = 160) throws -> (width: Int, height: Int, rgb: [UInt8]) {
        let jpeg = try MediaDecoder.render(path: MediaFiles.sample(name), maxSide: maxSide).get()
        return try #require(MediaFiles.decode(jpeg))
    }

    private func pixel(_ image: (width: Int, height: Int, rgb: [UInt8]), _ x: Int, _ y: Int) -> (Int, Int, Int) {
        let at = (y * image.width + x) * 3
        return (Int(image.rgb[at]), Int(image.rgb[at + 1]), Int(image.rgb[at + 2]))
    }

    @Test(arguments: [
        ("animated.gif", "gif", 64, 48), ("animated.webp", "webp", 64, 48), ("half-transparent.webp", "webp", 64, 48),
        ("exif.webp", "webp", 80, 60), ("photo.tiff", "tiff", 96, 64), ("photo.bmp", "bmp", 96, 64),
    ])
    func probedAsAPhotoOfItsSize(name: String, format: String, width: Int, height: Int) throws {
        let info = try MediaDecoder.probe(path: MediaFiles.sample(name)).get()
        #expect(info.kind == .photo && info.format == format, "\(info)")
        #expect(info.width == width && info.height == height)
        #expect(info.duration == nil)
    }

    @Test(arguments: [
        ("animated.gif", 40, 30), ("animated.webp", 40, 30), ("photo.tiff", 96, 64), ("photo.bmp", 40, 27),
    ])
    func renderedAtTheAskedSize(name: String, width: Int, height: Int) throws {
        let image = try rendered(name, maxSide: max(width, height))
        #expect(image.width == width && image.height == height)
    }

    /// Both animations are a red frame then a green one: the thumbnail is the first.
    @Test(arguments: ["animated.gif", "animated.webp"])
    func anAnimationIsItsFirstFrame(name: String) throws {
        let image = try rendered(name)
        let (r, g, b) = pixel(image, image.width / 2, image.height / 2)
        #expect(r > 200 && g < 60 && b < 60, "\(name): \(r),\(g),\(b)")
    }

    @Test func transparencyIsLaidOverWhite() throws {
        let image = try rendered("half-transparent.webp", maxSide: 64)
        let (r, g, b) = pixel(image, 8, image.height / 2)
        #expect(r > 200 && g < 60 && b < 60, "opaque half \(r),\(g),\(b)")
        let (r2, g2, b2) = pixel(image, image.width - 8, image.height / 2)
        #expect(r2 > 240 && g2 > 240 && b2 > 240, "transparent half \(r2),\(g2),\(b2)")
    }

    @Test func aWebPsExifGivesItsDateAndCamera() throws {
        let info = try MediaDecoder.probe(path: MediaFiles.sample("exif.webp")).get()
        #expect(info.takenISO == "2026-04-03T10:20:30+01:00")
        #expect(info.make == "Google" && info.model == "Pixel 8")
    }
}

/// Hostile GIF, WebP, TIFF and BMP files cost a bounded decode and never the worker.
@Suite struct HostileStillImageTests {
    /// `bytes` with a little-endian 16-bit value at `offset`.
    private func patched16(_ bytes: [UInt8], _ offset: Int, _ value: UInt16) -> [UInt8] {
        var out = bytes
        out[offset] = UInt8(value & 0xFF)
        out[offset + 1] = UInt8(value >> 8)
        return out
    }

    @Test func aGIFDeclaringSixtyFourThousandSquaredIsRefused() throws {
        // The logical screen (bytes 6-9) and the first image descriptor both claim 65,535 x 65,535.
        var bytes = try MediaFiles.bytes("animated.gif")
        bytes = patched16(patched16(bytes, 6, 0xFFFF), 8, 0xFFFF)
        if let descriptor = bytes.firstIndex(of: 0x2C) {
            bytes = patched16(patched16(bytes, descriptor + 5, 0xFFFF), descriptor + 7, 0xFFFF)
        }
        let path = try MediaFiles.write(bytes, "bomb.gif")
        defer { unlink(path) }
        let started = ContinuousClock.now
        if case .success = MediaDecoder.render(path: path, maxSide: 160) { Issue.record("a 4 Gpx GIF was decoded") }
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func aWebPDeclaringAHugeCanvasIsRefusedByItsDeclaredSize() throws {
        // VP8X canvas (bytes 24-29, each side minus one, 24-bit): 16,384 x 16,384 = 268 Mpx.
        var bytes = try MediaFiles.bytes("animated.webp")
        for offset in [24, 27] { bytes.replaceSubrange(offset..<(offset + 3), with: [0xFF, 0x3F, 0x00]) }
        let path = try MediaFiles.write(bytes, "bomb.webp")
        defer { unlink(path) }
        guard case .failure(let failure) = MediaDecoder.probe(path: path) else {
            Issue.record("a 268 Mpx WebP was accepted")
            return
        }
        #expect(failure.description.contains("beyond the limit"), "\(failure)")
        if case .success = MediaDecoder.render(path: path, maxSide: 160) { Issue.record("a 268 Mpx WebP was decoded") }
    }

    @Test func aTIFFDeclaringAHugeImageIsRefused() throws {
        // ImageWidth (256) and ImageLength (257) of the first IFD made 60,000 each.
        var bytes = try MediaFiles.bytes("photo.tiff")
        let ifd = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
        let count = Int(bytes[ifd]) | Int(bytes[ifd + 1]) << 8
        for entry in 0..<count {
            let at = ifd + 2 + entry * 12
            let tag = Int(bytes[at]) | Int(bytes[at + 1]) << 8
            let type = Int(bytes[at + 2]) | Int(bytes[at + 3]) << 8
            guard tag == 256 || tag == 257 else { continue }
            if type == 3 {
                bytes = patched16(bytes, at + 8, 60_000)
            } else {
                bytes.replaceSubrange((at + 8)..<(at + 12), with: [0x60, 0xEA, 0x00, 0x00])
            }
        }
        let path = try MediaFiles.write(bytes, "bomb.tiff")
        defer { unlink(path) }
        if case .success = MediaDecoder.render(path: path, maxSide: 160) { Issue.record("a 3.6 Gpx TIFF was decoded") }
    }

    @Test(arguments: ["animated.gif", "animated.webp", "exif.webp", "half-transparent.webp", "photo.tiff", "photo.bmp"])
    func aTruncatedOrGarbledFileIsRefusedNotFatal(name: String) throws {
        let bytes = try MediaFiles.bytes(name)
        var variants: [[UInt8]] = [0.1, 0.5, 0.9].map { Array(bytes.prefix(Int(Double(bytes.count) * $0))) }
        var garbled = bytes
        for index in stride(from: 16, to: garbled.count, by: 7) { garbled[index] ^= 0x5A }
        variants.append(garbled)
        variants.append(Array(bytes.prefix(16)) + [UInt8](repeating: 0xFF, count: 4_096))
        for (number, variant) in variants.enumerated() {
            let path = try MediaFiles.write(variant, "\(number)-" + name)
            defer { unlink(path) }
            _ = MediaDecoder.probe(path: path)
            if case .success(let jpeg) = MediaDecoder.render(path: path, maxSide: 160) {
                #expect(MediaFiles.decode(jpeg) != nil)  // a partial frame is fine; a crash is not
            }
        }
    }
}

/// The same formats through the real media worker, in its sandbox (every system call they need is allowed there):
/// each rendered, and the first worker serves them all.
@Suite struct SandboxedStillImageTests {
    @Test func eachFormatRendersInOneSandboxedWorker() throws {
        let sandbox = MediaSandboxTests.sandbox()
        for name in ["animated.gif", "animated.webp", "exif.webp", "half-transparent.webp", "photo.tiff", "photo.bmp"] {
            let jpeg = try sandbox.render(path: MediaFiles.sample(name), maxSide: 48).get()
            #expect(MediaFiles.decode(jpeg)?.width == 48, "\(name)")
        }
        #expect(try sandbox.probe(path: MediaFiles.sample("exif.webp")).get().model == "Pixel 8")
        #expect(sandbox.workersStarted == 1)
    }
}
