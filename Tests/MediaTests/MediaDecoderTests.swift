import Foundation
import MediaDecoding
import Testing

@Suite struct MediaProbeTests {
    @Test func heicCarriesExifDateWithOffsetCameraAndGPS() throws {
        let info = try MediaDecoder.probe(path: MediaFiles.sample("exif-photo.heic")).get()
        #expect(info.kind == .photo && info.format == "heic")
        #expect(info.width == 320 && info.height == 240)
        #expect(info.takenISO == "2026-05-12T14:03:11+02:00")
        #expect(info.takenSeconds == 1_778_587_391)
        #expect(info.make == "Apple" && info.model == "iPhone 15 Pro")
        #expect(abs((info.latitude ?? 0) - 48.8577) < 0.001 && abs((info.longitude ?? 0) - 2.295) < 0.001)
    }

    @Test func avifIsReadByLibheif() throws {
        let info = try MediaDecoder.probe(path: MediaFiles.sample("photo.avif")).get()
        #expect(info.format == "avif" && info.takenISO == "2026-05-11T09:30:00-04:00" && info.model == "Pixel 8")
    }

    @Test(arguments: [
        ("rotated.mp4", 240, 320, "2026-05-10T08:00:00Z"), ("rotated-hevc.mov", 240, 320, "2026-05-09T18:15:00Z"),
        ("clip.webm", 320, 240, nil), ("clip.3gp", 176, 144, nil),
    ])
    func videoHasDurationRotatedSizeAndCreationTime(name: String, width: Int, height: Int, taken: String?) throws {
        let info = try MediaDecoder.probe(path: MediaFiles.sample(name)).get()
        #expect(info.kind == .video)
        #expect(info.width == width && info.height == height)
        #expect((info.duration ?? 0) > 0.9 && (info.duration ?? 0) < 2.5)
        #expect(info.takenISO == taken)
    }

    @Test func livePhotoVideoCarriesAppleContentIdentifierAndLocalDate() throws {
        let info = try MediaDecoder.probe(path: MediaFiles.sample("live.mov")).get()
        #expect(info.contentID == "6A0E4D5C-2B59-4E0A-9A57-3D1C0E8F2B11")
        #expect(info.takenISO == "2026-05-08T12:00:00+01:00" && info.make == "Apple")
    }

    @Test func offsetsAreReadBothWays() {
        var info = MediaInfo(kind: .photo, format: "jpeg")
        info.takenLocal = "2026-05-12T00:30:00"
        info.offset = "-05:30"
        #expect(info.takenSeconds == Double(1_778_545_800 + 5 * 3600 + 1800))
        info.offset = nil
        #expect(info.takenSeconds == 1_778_545_800)
        info.offset = "+2"
        #expect(info.takenSeconds == 1_778_545_800)
    }

    /// Each EXIF orientation: the displayed size is swapped for 5-8, and the pixels are turned as it says (the
    /// red left half of the stored image ends up left, right, top or bottom).
    @Test(arguments: [
        (1, "left"), (2, "right"), (3, "right"), (4, "left"), (5, "top"), (6, "top"), (7, "bottom"),
        (8, "bottom"),
    ])
    func jpegWithEachExifOrientation(orientation: Int, red: String) throws {
        let path = try MediaFiles.orientedJPEG(orientation)
        defer { unlink(path) }
        let info = try MediaDecoder.probe(path: path).get()
        let swapped = orientation >= 5
        #expect(info.width == (swapped ? 20 : 40) && info.height == (swapped ? 40 : 20))
        let jpeg = try MediaDecoder.render(path: path, maxSide: 40).get()
        let image = try #require(MediaFiles.decode(jpeg))
        #expect(image.width == info.width && image.height == info.height)
        let (x, y) =
            switch red {
            case "left": (2, image.height / 2)
            case "right": (image.width - 3, image.height / 2)
            case "top": (image.width / 2, 2)
            default: (image.width / 2, image.height - 3)
            }
        let pixel = (y * image.width + x) * 3
        #expect(image.rgb[pixel] > 200 && image.rgb[pixel + 2] < 60, "orientation \(orientation)")
    }
}

@Suite struct MediaRenderTests {
    @Test(arguments: [
        ("exif-photo.heic", 160, 120), ("photo.avif", 160, 120), ("rotated.mp4", 120, 160),
        ("rotated-hevc.mov", 120, 160), ("clip.webm", 160, 120), ("clip.3gp", 160, 131), ("live.mov", 160, 120),
    ])
    func thumbnailIsAJPEGOrientedAsDisplayed(name: String, width: Int, height: Int) throws {
        let jpeg = try MediaDecoder.render(path: MediaFiles.sample(name), maxSide: 160).get()
        let image = try #require(MediaFiles.decode(jpeg))
        #expect(image.width == width && image.height == height)
    }

    /// An iPhone's HEIC: the primary item is a `grid` of HEVC tiles turned by `irot`, its EXIF an item of its own.
    /// The sample (`grid-rotated.heic`) is two 64 x 64 tiles, red then green, a quarter turn anticlockwise.
    @Test func gridTiledRotatedHEICIsAssembledTurnedAndDated() throws {
        let path = MediaFiles.sample("grid-rotated.heic")
        let info = try MediaDecoder.probe(path: path).get()
        #expect(info.kind == .photo && info.format == "heic")
        #expect(info.width == 64 && info.height == 128)
        #expect(info.takenISO == "2026-05-12T14:03:11+02:00" && info.make == "Apple")
        let jpeg = try MediaDecoder.render(path: path, maxSide: 128).get()
        let image = try #require(MediaFiles.decode(jpeg))
        #expect(image.width == 64 && image.height == 128)
        // Both tiles are there, turned: the right (green) tile on top, the left (red) one below.
        let top = (8 * image.width + 32) * 3
        let bottom = (120 * image.width + 32) * 3
        #expect(image.rgb[top + 1] > 90 && image.rgb[top] < 60, "top is not the green tile")
        #expect(image.rgb[bottom] > 200 && image.rgb[bottom + 1] < 60, "bottom is not the red tile")
    }

    /// `imir` on a grid: `grid-mirrored.heic` is red and green over blue and yellow, mirrored (axis 0). The image
    /// comes out mirrored; which way is libheif's reading of the axis (1.15 flips top and bottom for axis 0).
    @Test func gridTiledMirroredHEICIsMirrored() throws {
        let jpeg = try MediaDecoder.render(path: MediaFiles.sample("grid-mirrored.heic"), maxSide: 128).get()
        let image = try #require(MediaFiles.decode(jpeg))
        #expect(image.width == 128 && image.height == 128)
        func colour(_ x: Int, _ y: Int) -> String {
            let at = (y * image.width + x) * 3
            let (r, g, b) = (image.rgb[at], image.rgb[at + 1], image.rgb[at + 2])
            switch (r > 160, g > 90, b > 160) {
            case (true, false, false): return "red"
            case (false, true, false): return "green"
            case (false, false, true): return "blue"
            case (true, true, false): return "yellow"
            default: return "rgb(\(r),\(g),\(b))"
            }
        }
        let quadrants = [colour(32, 32), colour(96, 32), colour(32, 96), colour(96, 96)]
        let stored = ["red", "green", "blue", "yellow"]
        #expect(quadrants != stored, "imir was not applied")
        #expect(
            quadrants == ["green", "red", "yellow", "blue"] || quadrants == ["blue", "yellow", "red", "green"],
            "not a mirror image: \(quadrants)")
    }

    @Test func previewIsTheFullSize() throws {
        let jpeg = try MediaDecoder.render(path: MediaFiles.sample("exif-photo.heic"), maxSide: 8192).get()
        let image = try #require(MediaFiles.decode(jpeg))
        #expect(image.width == 320 && image.height == 240)
    }
}
