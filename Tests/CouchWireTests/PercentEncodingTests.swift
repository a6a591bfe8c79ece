import Testing

@testable import CouchWire

/// Percent-encoding of URL components: what CouchDB writes in `Location` and what the replicator sends, and a
/// decoder that refuses what is not a well-formed escape of UTF-8.
@Suite struct PercentEncodingTests {
    @Test func unreservedCharactersStayEverythingElseIsEscapedUppercase() {
        #expect(PercentEncoding.segment("abcXYZ019-._~") == "abcXYZ019-._~")
        #expect(PercentEncoding.segment("a/b c+d%e") == "a%2Fb%20c%2Bd%25e")
        #expect(PercentEncoding.segment("_design/app") == "_design%2Fapp")
        #expect(PercentEncoding.segment("é") == "%C3%A9")
        #expect(PercentEncoding.segment("😀") == "%F0%9F%98%80")
        #expect(PercentEncoding.segment("\u{0}\n") == "%00%0A")
        #expect(PercentEncoding.segment("") == "")
    }

    @Test func extraKeptCharactersAreOnlyASCII() {
        // RFC 5987 attr-chars, as Content-Disposition's filename* keeps them.
        #expect(PercentEncoding.encode("a!#$&+^`|b c", alsoKeeping: "!#$&+^`|") == "a!#$&+^`|b%20c")
        // A non-ASCII "kept" set cannot keep half of a multi-byte character.
        #expect(PercentEncoding.encode("é", alsoKeeping: "é") == "%C3%A9")
    }

    @Test func decodingRoundTripsWhatEncodingWrote() throws {
        for text in ["", "plain", "a/b c+d%e", "é😀\u{0}", String(repeating: "%", count: 100)] {
            let encoded = PercentEncoding.segment(text)
            #expect(PercentEncoding.decode(Substring(encoded)) == text)
        }
    }

    @Test func plusIsASpaceOnlyInQueries() {
        #expect(PercentEncoding.decode("a+b") == "a+b")
        #expect(PercentEncoding.decode("a+b", plusIsSpace: true) == "a b")
        #expect(PercentEncoding.decode("a%2Bb", plusIsSpace: true) == "a+b")
        #expect(PercentEncoding.decode("%e2%82%ac") == "€")
    }

    @Test func truncatedMalformedAndNonUTF8EscapesAreRefused() {
        #expect(PercentEncoding.decode("%") == nil)
        #expect(PercentEncoding.decode("abc%4") == nil)
        #expect(PercentEncoding.decode("%zz") == nil)
        #expect(PercentEncoding.decode("%4g") == nil)
        #expect(PercentEncoding.decode("%ff") == nil)  // a lone byte that is not UTF-8
        #expect(PercentEncoding.decode("%C3") == nil)  // a character cut in half
        #expect(PercentEncoding.decode("%ED%A0%80") == nil)  // a UTF-16 surrogate written as UTF-8
    }
}
