import Foundation
import Testing

@testable import CouchServer
@testable import PhotoDrop

@Suite struct PhotoFileNameTests {
    @Test func pathTraversalBecomesOneHarmlessName() {
        #expect(PhotoFileName.sanitize("../../etc/passwd") == "etc_passwd")
        #expect(PhotoFileName.sanitize("a/b.jpg") == "a_b.jpg")
        #expect(PhotoFileName.sanitize("..\\..\\windows\\win.ini") == "windows_win.ini")
        #expect(PhotoFileName.sanitize("/") == "")
        #expect(PhotoFileName.sanitize("..") == "")
        #expect(PhotoFileName.sanitize("a/./b/../c") == "a_b_c")
    }

    @Test func hiddenAndOptionLikeNamesLoseTheirLeadingCharacters() {
        #expect(PhotoFileName.sanitize(".hidden") == "hidden")
        #expect(PhotoFileName.sanitize("...jpg") == "jpg")
        #expect(PhotoFileName.sanitize("-rf *.jpg") == "rf *.jpg")
        #expect(PhotoFileName.sanitize("  spaced out.jpg  ") == "spaced out.jpg")
        #expect(PhotoFileName.sanitize("name.") == "name")
    }

    @Test func controlFormatAndSeparatorCharactersAreDropped() {
        #expect(PhotoFileName.sanitize("a\u{0}b\u{1}c\u{7F}d\u{9B}e.jpg") == "abcde.jpg")
        #expect(PhotoFileName.sanitize("line\nbreak\r\t.jpg") == "linebreak.jpg")
        #expect(PhotoFileName.sanitize("evil\u{202E}gpj.exe") == "evilgpj.exe")
        #expect(PhotoFileName.sanitize("zero\u{200B}width\u{2028}.jpg") == "zerowidth.jpg")
        #expect(PhotoFileName.sanitize("private\u{E000}use.jpg") == "privateuse.jpg")
    }

    @Test func dotRunsCollapseSoNoDoubleDotRemains() {
        #expect(PhotoFileName.sanitize("a..b...c.jpg") == "a.b.c.jpg")
    }

    @Test func unicodeSpacesAndEmojiAreKeptAsNFC() {
        let decomposed = "cafe\u{301} \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467} \u{1F3D6}\u{FE0F}.jpg"
        let name = PhotoFileName.sanitize(decomposed)
        #expect(name == "caf\u{E9} \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467} \u{1F3D6}\u{FE0F}.jpg")
        #expect(Array(name.utf8) == Array(name.precomposedStringWithCanonicalMapping.utf8))
    }

    @Test func uninformativeNamesUseTheDocumentIDAndTheSniffedExtension() {
        #expect(PhotoFileName.make(attachment: "photo", docID: "ABC-123", kind: .jpeg) == "ABC-123.jpg")
        #expect(PhotoFileName.make(attachment: "Attachment", docID: "x/y", kind: .png) == "x_y.png")
        #expect(PhotoFileName.make(attachment: "photo", docID: "nothing known", kind: nil) == "nothing known")
        #expect(PhotoFileName.make(attachment: "...", docID: "..", kind: .gif) == "photo.gif")
        #expect(PhotoFileName.make(attachment: "photo.jpg", docID: "d", kind: .jpeg) == "photo.jpg")
    }

    @Test func theSniffedExtensionIsAddedUnlessTheNameHasOneOfItsOwn() {
        #expect(PhotoFileName.make(attachment: "IMG_1.JPG", docID: "d", kind: .jpeg) == "IMG_1.JPG")
        #expect(PhotoFileName.make(attachment: "IMG_1.jpeg", docID: "d", kind: .jpeg) == "IMG_1.jpeg")
        #expect(PhotoFileName.make(attachment: "IMG_1.HEIC", docID: "d", kind: .heif) == "IMG_1.HEIC")
        #expect(PhotoFileName.make(attachment: "shot.png", docID: "d", kind: .jpeg) == "shot.png.jpg")
        #expect(PhotoFileName.make(attachment: "notes.txt", docID: "d", kind: nil) == "notes.txt")
    }

    @Test func longNamesAreCutAtCharactersAndKeepTheirExtension() {
        let name = PhotoFileName.make(attachment: String(repeating: "x", count: 1000) + ".jpg", docID: "d", kind: .jpeg)
        #expect(name == String(repeating: "x", count: 196) + ".jpg")
        let emoji = PhotoFileName.make(
            attachment: String(repeating: "\u{1F4F7}", count: 300) + ".jpg", docID: "d", kind: .jpeg)
        #expect(emoji.utf8.count <= PhotoFileName.maxBytes)
        #expect(emoji.hasSuffix("\u{1F4F7}.jpg"))
        let numbered = PhotoFileName.numbered(name, 12345)
        #expect(numbered.utf8.count <= PhotoFileName.maxBytes)
        #expect(numbered.hasSuffix(" (12345).jpg"))
    }

    @Test func countersGoBeforeTheExtension() {
        #expect(PhotoFileName.numbered("photo.jpg", 1) == "photo.jpg")
        #expect(PhotoFileName.numbered("photo.jpg", 2) == "photo (2).jpg")
        #expect(PhotoFileName.numbered("nothing known", 3) == "nothing known (3)")
        #expect(PhotoFileName.numbered("archive.tar.gz", 2) == "archive.tar (2).gz")
    }

    /// Whatever goes in, what comes out is one safe file name.
    @Test func randomHostileInputsAlwaysGiveSafeNames() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Unicode.Scalar] = [
            "/", "\\", ".", "-", " ", "\u{0}", "\u{1B}", "\u{7F}", "\u{85}", "\u{202E}", "\u{200D}", "\u{2028}",
            "a", "Z", "\u{E9}", "\u{301}", "\u{1F4F7}", "\u{FEFF}", "\u{E000}", "\t",
        ]
        for _ in 0..<2000 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...400, using: &generator) {
                text.append(alphabet[Int.random(in: 0..<alphabet.count, using: &generator)])
            }
            let name = PhotoFileName.make(attachment: String(text), docID: String(text), kind: .jpeg)
            #expect(!name.isEmpty && name.utf8.count <= PhotoFileName.maxBytes)
            #expect(!name.contains("/") && !name.contains("\\") && !name.contains(".."))
            #expect(!name.hasPrefix(".") && !name.hasPrefix("-") && !name.hasPrefix(" "))
            #expect(!name.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
            #expect(!name.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{2028}" || $0 == "\u{FEFF}" })
        }
    }
}
