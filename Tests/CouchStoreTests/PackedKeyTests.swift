import Foundation
import Testing

@testable import CouchStore

@Suite("PackedKey")
struct PackedKeyTests {
    @Test func aKeyIsItsSixteenBytes() throws {
        let key = try #require(PackedKey("0123456789abcdef" + "fedcba9876543210"))
        #expect(key.high == 0x0123_4567_89ab_cdef && key.low == 0xfedc_ba98_7654_3210)
        let fs = String(repeating: "f", count: 31)
        #expect(PackedKey("0" + fs) != PackedKey(fs + "0"))
    }

    @Test(arguments: [
        "", "0123", String(repeating: "a", count: 31), String(repeating: "a", count: 33),
        String(repeating: "A", count: 32),  // keys are lowercase: an uppercase one names no stored blob
        String(repeating: "g", count: 32), String(repeating: "a", count: 31) + "é",
        "../" + String(repeating: "a", count: 29),
    ])
    func anythingButThirtyTwoLowercaseHexDigitsIsRefused(key: String) {
        #expect(PackedKey(key) == nil)
    }

    @Test func aRefusedKeyIsNeverKnownDurable() throws {
        let store = try BlobStore(directory: NSTemporaryDirectory() + "packed-key-\(UInt64.random(in: 0...UInt64.max))")
        defer { try? store.destroy() }
        #expect(!store.isKnownDurable(String(repeating: "A", count: 32)))
    }
}
