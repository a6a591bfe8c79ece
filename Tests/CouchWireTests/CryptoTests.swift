import CouchCrypto
import Testing

@Suite struct DigestTests {
    @Test func md5OfKnownVectors() {
        #expect(Digest.hash(.md5, Array("".utf8)).hexString == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Digest.hash(.md5, Array("abc".utf8)).hexString == "900150983cd24fb0d6963f7d28e17f72")
    }

    @Test func sha1StreamedEqualsOneShot() {
        let data = Array("The quick brown fox jumps over the lazy dog".utf8)
        let streamed = Digest(.sha1)
        for byte in data { streamed.update([byte]) }
        #expect(streamed.finalize() == Digest.hash(.sha1, data))
        #expect(Digest.hash(.sha1, data).hexString == "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12")
    }

    @Test func pbkdf2MatchesRFC7914Vector() {
        let out = Secrets.pbkdf2SHA256(
            password: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1, length: 64)
        #expect(out.hexString.hasPrefix("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"))
    }

    @Test func constantTimeEqualComparesContent() {
        #expect(Secrets.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Secrets.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Secrets.constantTimeEqual([1, 2], [1, 2, 3]))
    }
}
