import CThumbnail
import Foundation
import Testing
import Thumbnails

/// Test images, made with the same libraries the thumbnailer reads them with.
enum Images {
    static func temp(_ name: String) -> String {
        NSTemporaryDirectory() + "thumbtest-" + String(UInt32.random(in: 0...UInt32.max), radix: 16) + "-" + name
    }

    /// Packed RGB: the left half `left`, the right half `right`.
    static func halves(width: Int, height: Int, left: [UInt8], right: [UInt8]) -> [UInt8] {
        var rgb: [UInt8] = []
        rgb.reserveCapacity(width * height * 3)
        for _ in 0..<height {
            for x in 0..<width { rgb += x < width / 2 ? left : right }
        }
        return rgb
    }

    static func jpeg(_ rgb: [UInt8], width: Int, height: Int) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let status = rgb.withUnsafeBufferPointer {
            thumb_encode_jpeg($0.baseAddress, Int32(width), Int32(height), 95, &out, &length)
        }
        guard status == 0, let out else { return [] }
        defer { thumb_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: length))
    }

    /// An APP1 `Exif` segment holding only an orientation tag.
    static func exifSegment(orientation: UInt8, bigEndian: Bool = false) -> [UInt8] {
        let tiff: [UInt8] =
            bigEndian
            ? [0x4D, 0x4D, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, 0, 0, 0, 0]
            : [0x49, 0x49, 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, orientation, 0, 0, 0, 0, 0, 0, 0]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// `jpeg` with an EXIF segment right after its SOI marker.
    static func withOrientation(_ jpeg: [UInt8], _ orientation: UInt8) -> [UInt8] {
        Array(jpeg.prefix(2)) + exifSegment(orientation: orientation) + Array(jpeg.dropFirst(2))
    }

    static func write(_ bytes: [UInt8], _ name: String) -> String {
        let path = temp(name)
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    static func decode(_ jpeg: [UInt8]) -> (rgb: [UInt8], width: Int, height: Int)? {
        var pixels: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0
        var height: Int32 = 0
        let status = jpeg.withUnsafeBufferPointer {
            thumb_decode_jpeg_memory($0.baseAddress, $0.count, &pixels, &width, &height)
        }
        guard status == 0, let pixels else { return nil }
        defer { thumb_free(pixels) }
        return (Array(UnsafeBufferPointer(start: pixels, count: Int(width * height * 3))), Int(width), Int(height))
    }

    /// The pixel at (x, y) of a decoded image.
    static func pixel(_ image: (rgb: [UInt8], width: Int, height: Int), _ x: Int, _ y: Int) -> [UInt8] {
        let at = (y * image.width + x) * 3
        return Array(image.rgb[at..<at + 3])
    }

    static func isRed(_ p: [UInt8]) -> Bool { p[0] > 200 && p[1] < 60 && p[2] < 60 }
    static func isBlue(_ p: [UInt8]) -> Bool { p[0] < 60 && p[1] < 60 && p[2] > 200 }
    static func isWhite(_ p: [UInt8]) -> Bool { p.allSatisfy { $0 > 230 } }
}

@Suite struct ThumbnailerTests {
    @Test func jpegIsDownscaledKeepingItsShapeAndContent() throws {
        let rgb = Images.halves(width: 640, height: 480, left: [255, 0, 0], right: [0, 0, 255])
        let path = Images.write(Images.jpeg(rgb, width: 640, height: 480), "a.jpg")
        defer { unlink(path) }
        let made = try Thumbnailer.make(path: path, maxSide: 200).get()
        #expect(made.width == 200 && made.height == 150)
        #expect(made.sourceWidth == 640 && made.sourceHeight == 480 && made.orientation == 1)
        let image = try #require(Images.decode(made.jpeg))
        #expect(image.width == 200 && image.height == 150)
        #expect(Images.isRed(Images.pixel(image, 10, 75)))
        #expect(Images.isBlue(Images.pixel(image, 190, 75)))
    }

    @Test func smallImagesAreNotEnlarged() throws {
        let rgb = Images.halves(width: 40, height: 30, left: [255, 0, 0], right: [0, 0, 255])
        let path = Images.write(Images.jpeg(rgb, width: 40, height: 30), "small.jpg")
        defer { unlink(path) }
        let made = try Thumbnailer.make(path: path, maxSide: 256).get()
        #expect(made.width == 40 && made.height == 30)
    }

    @Test func pngWithTransparencyIsCompositedOverWhite() throws {
        let width = 300
        let height = 100
        var rgba: [UInt8] = []
        for _ in 0..<height {
            for x in 0..<width {
                rgba += x < 100 ? [255, 0, 0, 255] : x < 200 ? [0, 0, 0, 0] : [0, 0, 255, 255]
            }
        }
        for interlaced in [false, true] {
            let path = Images.temp(interlaced ? "i.png" : "p.png")
            defer { unlink(path) }
            #expect(thumb_write_png(path, rgba, Int32(width), Int32(height), interlaced ? 1 : 0) == 0)
            let made = try Thumbnailer.make(path: path, maxSide: 150).get()
            #expect(made.width == 150 && made.height == 50)
            let image = try #require(Images.decode(made.jpeg))
            #expect(Images.isRed(Images.pixel(image, 20, 25)))
            #expect(Images.isWhite(Images.pixel(image, 75, 25)))
            #expect(Images.isBlue(Images.pixel(image, 130, 25)))
        }
    }

    /// A wide image whose left half is red, stored with each EXIF orientation: the thumbnail
    /// must look as a viewer shows it.
    @Test(arguments: [
        (UInt8(1), "left"), (2, "right"), (3, "right"), (4, "left"), (5, "top"), (6, "top"), (7, "bottom"),
        (8, "bottom"),
    ])
    func exifOrientationIsApplied(orientation: UInt8, redSide: String) throws {
        let rgb = Images.halves(width: 200, height: 100, left: [255, 0, 0], right: [0, 0, 255])
        let jpeg = Images.withOrientation(Images.jpeg(rgb, width: 200, height: 100), orientation)
        let path = Images.write(jpeg, "o\(orientation).jpg")
        defer { unlink(path) }
        let made = try Thumbnailer.make(path: path, maxSide: 100).get()
        #expect(made.orientation == Int(orientation))
        let image = try #require(Images.decode(made.jpeg))
        let turned = orientation >= 5
        #expect(image.width == (turned ? 50 : 100) && image.height == (turned ? 100 : 50))
        let (w, h) = (image.width, image.height)
        let probes: [String: (Int, Int)] = [
            "left": (3, h / 2), "right": (w - 4, h / 2), "top": (w / 2, 3), "bottom": (w / 2, h - 4),
        ]
        let opposite = ["left": "right", "right": "left", "top": "bottom", "bottom": "top"]
        let red = try #require(probes[redSide])
        let blue = try #require(probes[opposite[redSide] ?? ""])
        #expect(Images.isRed(Images.pixel(image, red.0, red.1)))
        #expect(Images.isBlue(Images.pixel(image, blue.0, blue.1)))
    }

    @Test func exifParserReadsBothByteOrders() {
        #expect(Thumbnailer.exifOrientation(Array(Images.exifSegment(orientation: 6).dropFirst(4))) == 6)
        #expect(
            Thumbnailer.exifOrientation(Array(Images.exifSegment(orientation: 8, bigEndian: true).dropFirst(4))) == 8)
    }

    /// Hostile EXIF blocks: truncated, offsets past the end, absurd counts, wrong types, values out
    /// of range. Each must read as "no orientation", never past the buffer.
    @Test func exifParserSurvivesHostileBlocks() {
        let good = Array(Images.exifSegment(orientation: 6).dropFirst(4))
        #expect(Thumbnailer.exifOrientation([]) == 1)
        #expect(Thumbnailer.exifOrientation(Array("Exif".utf8) + [0, 0]) == 1)
        for cut in 0..<good.count - 6 {
            let value = Thumbnailer.exifOrientation(Array(good.prefix(cut)))
            #expect(value == 1 || cut >= 6 + 20, "prefix of \(cut) bytes read \(value)")
        }
        var farOffset = good
        farOffset.replaceSubrange(10..<14, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(Thumbnailer.exifOrientation(farOffset) == 1)
        var hugeCount = good
        hugeCount.replaceSubrange(14..<16, with: [0xFF, 0xFF])
        hugeCount[16] = 0x13  // not the orientation tag: the parser must walk on, off the end
        #expect(Thumbnailer.exifOrientation(hugeCount) == 1)
        var wrongType = good
        wrongType[18] = 4
        #expect(Thumbnailer.exifOrientation(wrongType) == 1)
        var outOfRange = good
        outOfRange[24] = 9
        #expect(Thumbnailer.exifOrientation(outOfRange) == 1)
        var notTIFF = good
        notTIFF[6] = 0x58
        #expect(Thumbnailer.exifOrientation(notTIFF) == 1)
    }

    @Test func corruptFilesFailWithoutCrashing() throws {
        let rgb = Images.halves(width: 64, height: 64, left: [255, 0, 0], right: [0, 0, 255])
        let jpeg = Images.jpeg(rgb, width: 64, height: 64)
        var garbage: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]
        for i in 0..<4096 { garbage.append(UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13)) }
        let pngPath = Images.temp("t.png")
        #expect(thumb_write_png(pngPath, [UInt8](repeating: 200, count: 64 * 64 * 4), 64, 64, 0) == 0)
        let png = try [UInt8](Data(contentsOf: URL(fileURLWithPath: pngPath)))
        unlink(pngPath)
        var badCRC = png
        badCRC[29] ^= 0xFF  // inside IHDR: its CRC no longer matches
        let cases: [(String, [UInt8])] = [
            ("empty", []), ("text", Array("hello, not an image".utf8)), ("jpeg-magic-garbage", garbage),
            ("jpeg-header-only", Array(jpeg.prefix(20))), ("png-header-only", Array(png.prefix(30))),
            ("png-bad-crc", badCRC), ("png-no-idat", Array(png.prefix(33)) + Array(png.suffix(12))),
        ]
        for (name, bytes) in cases {
            let path = Images.write(bytes, name)
            defer { unlink(path) }
            switch Thumbnailer.make(path: path, maxSide: 100) {
            case .success: Issue.record("\(name) made a thumbnail")
            case .failure(let failure): #expect(!failure.description.isEmpty)
            }
        }
        #expect(throws: (any Error).self) { try Thumbnailer.make(path: "/nonexistent/x.jpg", maxSide: 10).get() }
    }

    /// A truncated JPEG shows what was decoded (as browsers do) instead of failing.
    @Test func truncatedJpegStillGivesAThumbnail() throws {
        let rgb = Images.halves(width: 256, height: 256, left: [255, 0, 0], right: [0, 0, 255])
        let jpeg = Images.jpeg(rgb, width: 256, height: 256)
        let path = Images.write(Array(jpeg.prefix(jpeg.count * 2 / 3)), "cut.jpg")
        defer { unlink(path) }
        let made = try Thumbnailer.make(path: path, maxSide: 64).get()
        #expect(made.width == 64 && made.height == 64)
    }

    @Test func imagesOverThePixelLimitAreRefused() {
        let path = Images.temp("limit.jpg")
        defer { unlink(path) }
        #expect(thumb_write_test_jpeg(path, 200, 200, 0) == 0)
        guard case .failure(let failure) = Thumbnailer.make(path: path, maxSide: 64, maxPixels: 10_000) else {
            Issue.record("a 40,000-pixel image passed a 10,000-pixel limit")
            return
        }
        #expect(failure.description.contains("limit"))
    }

    /// A PNG of a few bytes declaring 19,999 x 19,999 pixels (400 Mpx, all zeros compress to nothing) cost 5 s of
    /// CPU per thumbnail size: it is refused by its declared size, before any pixel is decoded.
    @Test func pngDeclaringAHugeSizeIsRefusedBeforeDecoding() throws {
        let header: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D,
            0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x4E, 0x1F, 0x00, 0x00, 0x4E, 0x1F,
            0x08, 0x02, 0x00, 0x00, 0x00, 0x00, 0xC6, 0xBD, 0xA3, 0x00, 0x00, 0x00,
            0x0C, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x60, 0xA0, 0x0C, 0x00,
            0x00, 0x00, 0x40, 0x00, 0x01, 0xB7, 0x34, 0x7C, 0xEF, 0x00, 0x00, 0x00,
            0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
        ]
        let path = Images.write(header, "declared-huge.png")
        defer { unlink(path) }
        let started = ContinuousClock.now
        guard case .failure(let failure) = Thumbnailer.make(path: path, maxSide: 256) else {
            Issue.record("a PNG declaring 19,999 x 19,999 pixels was thumbnailed")
            return
        }
        #expect(failure.description.contains("pixel limit"), "\(failure)")
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(Thumbnailer.maxPixels <= 50_000_000)
    }

    /// A progressive JPEG needs a coefficient buffer the size of the image: under a budget too
    /// small for it the decode fails cleanly instead of allocating past the budget.
    @Test func progressiveJpegRespectsTheMemoryBudget() throws {
        let path = Images.temp("prog.jpg")
        defer { unlink(path) }
        #expect(thumb_write_test_jpeg(path, 3000, 3000, 1) == 0)
        #expect(throws: (any Error).self) { try Thumbnailer.make(path: path, maxSide: 256, memoryLimit: 4 << 20).get() }
        let made = try Thumbnailer.make(path: path, maxSide: 256).get()
        #expect(made.width == 256 && made.height == 256)
    }

    /// A 16,000 x 12,000 photo (576 MB as RGB) is thumbnailed within a few MB: libjpeg's budget
    /// is set to 8 MB (it fails past it) and the process's peak RSS grows by far less than the image.
    @Test func hugeJpegIsThumbnailedInBoundedMemory() throws {
        let path = Images.temp("huge.jpg")
        defer { unlink(path) }
        #expect(thumb_write_test_jpeg(path, 16000, 12000, 0) == 0)
        let before = Self.resetPeakRSS()
        let made = try Thumbnailer.make(path: path, maxSide: 256, memoryLimit: 8 << 20, maxPixels: 200_000_000).get()
        let peak = Self.peakRSS()
        #expect(made.width == 256 && made.height == 192)
        #expect(made.sourceWidth == 16000 && made.sourceHeight == 12000)
        if let before, let peak {
            #expect(peak - before < 100 << 20, "peak RSS grew by \((peak - before) >> 20) MiB")
        }
        let image = try #require(Images.decode(made.jpeg))
        // The gradient: red grows left to right, green top to bottom.
        #expect(Images.pixel(image, 2, 2)[0] < 20 && Images.pixel(image, 253, 2)[0] > 235)
        #expect(Images.pixel(image, 2, 189)[1] > 235)
    }

    /// Resets the kernel's peak RSS to the current RSS (`clear_refs` 5) and returns it, in bytes.
    static func resetPeakRSS() -> Int? {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return nil }
        handle.write(Data("5".utf8))
        try? handle.close()
        return status("VmRSS")
    }

    static func peakRSS() -> Int? { status("VmHWM") }

    private static func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return digits.map { $0 * 1024 }
        }
        return nil
    }
}
