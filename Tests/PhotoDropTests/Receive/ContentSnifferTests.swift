import Testing

@testable import CouchServer
@testable import PhotoDrop

@Suite struct ContentSnifferTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func recognisesPhotoAndVideoFormats() {
        #expect(ContentSniffer.sniff([0xFF, 0xD8, 0xFF, 0xE1, 0, 0]) == .jpeg)
        #expect(ContentSniffer.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]) == .png)
        #expect(ContentSniffer.sniff(Self.bytes("GIF89a....")) == .gif)
        #expect(ContentSniffer.sniff(Self.bytes("GIF87a....")) == .gif)
        #expect(ContentSniffer.sniff(Self.bytes("RIFF\0\0\0\0WEBPVP8 ")) == .webp)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x18] + Self.bytes("ftypheic\0\0\0\0mif1")) == .heic)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x18] + Self.bytes("ftypmif1\0\0\0\0heic")) == .heif)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x18] + Self.bytes("ftypavif")) == .avif)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x14] + Self.bytes("ftypqt  ")) == .mov)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x20] + Self.bytes("ftypisom")) == .mp4)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x20] + Self.bytes("ftypmp42")) == .mp4)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x20] + Self.bytes("ftyp3gp5")) == .threeGP)
        #expect(ContentSniffer.sniff([0, 0, 0, 8] + Self.bytes("moov")) == .mov)
        #expect(ContentSniffer.sniff([0x49, 0x49, 0x2A, 0, 8, 0, 0, 0]) == .tiff)
        #expect(ContentSniffer.sniff([0x4D, 0x4D, 0, 0x2A, 0, 0, 0, 8]) == .tiff)
        #expect(ContentSniffer.sniff(Self.bytes("BM") + [0x36, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0]) == .bmp)
    }

    @Test func truncatedAndUnknownContentIsNothing() {
        #expect(ContentSniffer.sniff([]) == nil)
        #expect(ContentSniffer.sniff([0xFF, 0xD8]) == nil)
        #expect(ContentSniffer.sniff([0x89, 0x50, 0x4E, 0x47]) == nil)
        #expect(ContentSniffer.sniff(Self.bytes("RIFF\0\0\0\0WAVE")) == nil)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x18] + Self.bytes("ftyp")) == nil)
        #expect(ContentSniffer.sniff([0, 0, 0, 0x18] + Self.bytes("ftypzzzz")) == nil)
        #expect(ContentSniffer.sniff(Self.bytes("BM hello world")) == nil)
        #expect(ContentSniffer.sniff(Self.bytes("{\"json\": true}")) == nil)
    }

    @Test func recognisesTheVideoContainersPushSends() {
        #expect(ContentSniffer.sniff(Self.bytes("RIFF\0\0\0\0AVI LIST")) == .avi)
        #expect(ContentSniffer.sniff([0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81]) == .matroska)
        var m2ts = [UInt8](repeating: 0xAA, count: 3 * 192)
        for packet in 0..<3 { m2ts[packet * 192 + 4] = 0x47 }
        #expect(ContentSniffer.sniff(m2ts) == .m2ts)
    }

    @Test func textRenamedAsMediaIsNothing() {
        // What a person renames: notes, a web page, JSON, a script; and one sync byte is no transport stream.
        for text in ["shopping list: milk, eggs\n", "<!doctype html><title>x</title>", "{\"taken\": 1}", "#!/bin/sh\n"]
        {
            #expect(ContentSniffer.sniff(Self.bytes(text)) == nil, "\(text)")
        }
        var one = [UInt8](repeating: 0x20, count: 400)
        one[4] = 0x47
        #expect(ContentSniffer.sniff(one) == nil)
        one[196] = 0x47
        #expect(ContentSniffer.sniff(one) == nil, "two packets are not enough")
    }

    @Test func aPrefixTakesOnlyTheFirstBytesOfItsChunks() {
        var head = ContentSniffer.Prefix()
        let chunk = [UInt8](repeating: 7, count: 300)
        chunk.withUnsafeBytes { head.take($0) }
        chunk.withUnsafeBytes { head.take($0) }
        chunk.withUnsafeBytes { head.take($0) }
        #expect(head.bytes.count == ContentSniffer.prefixBytes)
    }

    @Test func randomBytesRarelyLookLikeAPhoto() {
        var generator = SystemRandomNumberGenerator()
        var hits = 0
        for _ in 0..<5000 {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if ContentSniffer.sniff(bytes) != nil { hits += 1 }
        }
        #expect(hits < 10)
    }

    @Test func contentTypesNameTheirFormat() {
        #expect(ContentSniffer.kind(mediaType: "image/jpeg") == .jpeg)
        #expect(ContentSniffer.kind(mediaType: "IMAGE/JPG") == .jpeg)
        #expect(ContentSniffer.kind(mediaType: "video/quicktime; codecs=x") == .mov)
        #expect(ContentSniffer.kind(mediaType: "application/octet-stream") == nil)
    }
}
