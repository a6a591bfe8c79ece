import Testing

@testable import CouchServer

/// `Range` headers read as mochiweb and `chttpd_db:parse_ranges` read them (issue 38): one range is a 206, two to
/// nine a multipart/byteranges 206, anything unreadable the whole attachment, a backwards or past-the-end range 416.
@Suite struct ByteRangeTests {
    let length = 1_024

    @Test func oneRangeIsOneSlice() {
        #expect(ByteRange.parse("bytes=2-5", length: length) == .bytes(2, 5))
        #expect(ByteRange.parse("bytes=-7", length: length) == .bytes(1_017, 1_023))
        #expect(ByteRange.parse("bytes=1000-5000", length: length) == .bytes(1_000, 1_023))
        #expect(ByteRange.parse("bytes=0-", length: length) == .whole)
    }

    @Test func severalRangesKeepTheirOrderAndOverlaps() {
        #expect(ByteRange.parse("bytes=0-9,20-29", length: length) == .several([0...9, 20...29]))
        #expect(ByteRange.parse("bytes= 20-29 , 0-9,5-6", length: length) == .several([20...29, 0...9, 5...6]))
        #expect(ByteRange.parse("bytes=-3,,1020-", length: length) == .several([1_021...1_023, 1_020...1_023]))
        #expect(ByteRange.parse("bytes=0-9,0-", length: length) == .whole)  // CouchDB drops every range then
    }

    @Test func tenRangesOrMoreAreTheWholeAttachment() {
        let ten = (0..<10).map { "\($0)-\($0)" }.joined(separator: ",")
        #expect(ByteRange.parse("bytes=" + ten, length: length) == .whole)
        let many = String(repeating: "1-2,", count: 100_000)
        #expect(ByteRange.parse("bytes=" + many, length: length) == .whole)
    }

    @Test func hostileAndMalformedRangesNeverTrap() {
        for header in [
            "bytes=", "bytes=,", "bytes=-", "bytes=--1", "bytes=1-2-3", "bytes=a-b", "bytes=-0",
            "bytes=99999999999999999999-", "bytes=-99999999999999999999", "bytes=9223372036854775807-",
            "bytes=-9223372036854775807", "bytes=0-9223372036854775807", "pages=1-2", "bytes=\u{0}-1",
        ] {
            switch ByteRange.parse(header, length: length) {
            case .whole, .unsatisfiable: break
            case .bytes(let first, let last): #expect(0 <= first && first <= last && last < length, "\(header)")
            case .several(let ranges): #expect(ranges.allSatisfy { $0.lowerBound >= 0 && $0.upperBound < length })
            }
        }
        #expect(ByteRange.parse("bytes=0-9,30-20", length: length) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=0-9,2000-", length: length) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=0-1,2-3", length: 0) == .unsatisfiable)
    }
}
