import CZlib
import Testing

@testable import CouchServer
@testable import PhotoDrop

@Suite struct QRCodeTests {
    static let url = "http://drop-0123456789ab:0123456789abcdef0123456789abcdef@192.168.1.20:5984/photodrop"

    @Test func encodesAURLWithFinderPatterns() throws {
        let code = try #require(QRCode.encode(Self.url))
        #expect(code.size >= 21 && (code.size - 17) % 4 == 0)
        // The three finder patterns: a dark 7x7 ring with a dark 3x3 centre, in three corners.
        for (x0, y0) in [(0, 0), (code.size - 7, 0), (0, code.size - 7)] {
            for i in 0..<7 {
                #expect(code.isDark(x: x0 + i, y: y0) && code.isDark(x: x0 + i, y: y0 + 6))
                #expect(code.isDark(x: x0, y: y0 + i) && code.isDark(x: x0 + 6, y: y0 + i))
            }
            #expect(!code.isDark(x: x0 + 1, y: y0 + 1) && code.isDark(x: x0 + 3, y: y0 + 3))
        }
        #expect(!code.isDark(x: -1, y: 0) && !code.isDark(x: code.size, y: code.size))
    }

    @Test func differentTextGivesADifferentCode() throws {
        let a = try #require(QRCode.encode(Self.url))
        let b = try #require(QRCode.encode(Self.url.uppercased()))
        #expect(a != b)
    }

    /// Reads the half blocks back: every module, the quiet zone around them, nothing else.
    @Test func terminalTextHoldsEveryModuleWithAQuietZone() throws {
        let code = try #require(QRCode.encode(Self.url))
        let lines = code.terminalText(colors: false).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let side = code.size + 2 * QRCode.quietZone
        #expect(lines.count == (side + 1) / 2)
        for (row, line) in lines.enumerated() {
            let glyphs = Array(line)
            #expect(glyphs.count == side)
            for (column, glyph) in glyphs.enumerated() {
                let x = column - QRCode.quietZone
                let y = row * 2 - QRCode.quietZone
                let top = glyph == "\u{2580}" || glyph == "\u{2588}"
                let bottom = glyph == "\u{2584}" || glyph == "\u{2588}"
                #expect(top == code.isDark(x: x, y: y) && bottom == code.isDark(x: x, y: y + 1))
            }
        }
        let colored = code.terminalText(colors: true)
        #expect(colored.hasPrefix("\u{1B}[30;107m") && colored.contains("\u{1B}[0m\n"))
    }

    /// Decodes the PNG with zlib: the signature, chunk CRCs, header, and every pixel.
    @Test func pngHoldsEveryModuleScaledWithAQuietZone() throws {
        let code = try #require(QRCode.encode(Self.url))
        let scale = 3
        let png = code.png(scale: scale)
        #expect(Array(png.prefix(8)) == PNGEncoder.signature)
        var chunks: [(String, [UInt8])] = []
        var offset = 8
        while offset + 12 <= png.count {
            let length =
                Int(png[offset]) << 24 | Int(png[offset + 1]) << 16 | Int(png[offset + 2]) << 8
                | Int(png[offset + 3])
            let typed = Array(png[(offset + 4)..<(offset + 8 + length)])
            let crc = png[(offset + 8 + length)..<(offset + 12 + length)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let computed = typed.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, UInt32($0.count))) }
            #expect(crc == computed)
            chunks.append((String(decoding: typed.prefix(4), as: UTF8.self), Array(typed.dropFirst(4))))
            offset += 12 + length
        }
        #expect(offset == png.count)
        #expect(chunks.map(\.0) == ["IHDR", "IDAT", "IEND"])
        let side = (code.size + 2 * QRCode.quietZone) * scale
        #expect(
            chunks[0].1 == PNGEncoder.bigEndian(UInt32(side)) + PNGEncoder.bigEndian(UInt32(side)) + [8, 0, 0, 0, 0])
        var raw = [UInt8](repeating: 0, count: (side + 1) * side)
        var rawLength = uLong(raw.count)
        let idat = chunks[1].1
        let status = raw.withUnsafeMutableBufferPointer { out in
            idat.withUnsafeBufferPointer { uncompress(out.baseAddress, &rawLength, $0.baseAddress, uLong($0.count)) }
        }
        #expect(status == Z_OK && Int(rawLength) == raw.count)
        for py in 0..<side {
            #expect(raw[py * (side + 1)] == 0)  // filter None
            for px in 0..<side {
                let dark = code.isDark(x: px / scale - QRCode.quietZone, y: py / scale - QRCode.quietZone)
                #expect(raw[py * (side + 1) + 1 + px] == (dark ? 0 : 255))
            }
        }
    }

    @Test func textTooLongForAnyVersionIsRefused() {
        #expect(QRCode.encode(String(repeating: "x", count: 5000)) == nil)
    }
}
