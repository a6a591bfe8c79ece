import Testing

@testable import CouchServer

/// How much a gzip body is decoded at ingest to check its length: 64 times its size plus 1 MiB, within the largest
/// attachment, whatever the size it claims (`Limits.gzipExpansionBound`). The attack it bounds, a gzip bomb, is
/// conformance/test_attachments.py's `test_gzip_bomb_attachment_is_refused_after_bounded_work`.
@Suite struct GzipExpansionBoundTests {
    @Test func aBodyMayDecodeToItsRatioPlusTheSlack() {
        #expect(Limits.gzipExpansionBound(encoded: 0) == Limits.gzipExpansionSlack)
        #expect(Limits.gzipExpansionBound(encoded: 1000) == 64_000 + Limits.gzipExpansionSlack)
        #expect(Limits.gzipExpansionBound(encoded: 4_000_000) == 256_000_000 + Limits.gzipExpansionSlack)
    }

    @Test func aHugeOrNegativeSizeNeitherTrapsNorPassesTheLargestAttachment() {
        #expect(Limits.gzipExpansionBound(encoded: -5) == Limits.gzipExpansionSlack)
        #expect(Limits.gzipExpansionBound(encoded: Int.max) == Limits.gzipIdentityBytes)
        #expect(Limits.gzipExpansionBound(encoded: Int.max / 64 + 1) == Limits.gzipIdentityBytes)
        #expect(Limits.gzipExpansionBound(encoded: Limits.gzipIdentityBytes) == Limits.gzipIdentityBytes)
        for encoded in stride(from: 0, to: Limits.gzipIdentityBytes, by: Limits.gzipIdentityBytes / 97 + 1) {
            #expect(Limits.gzipExpansionBound(encoded: encoded) <= Limits.gzipIdentityBytes)
        }
    }
}
