import CThumbnail
import Foundation
import Synchronization
import Testing
import Thumbnails

@Suite struct ThumbnailCacheTests {
    static func directory() -> String {
        let path = Images.temp("cache")
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func aThumbnailIsMadeOnceEvenUnderConcurrentRequests() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = Images.temp("src.jpg")
        defer { unlink(source) }
        #expect(thumb_write_test_jpeg(source, 1200, 800, 0) == 0)
        let cache = ThumbnailCache(directory: dir)
        let key = String(repeating: "ab", count: 16)
        let outcomes = Mutex<[ThumbnailCache.Outcome]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let outcome = try? cache.thumbnail(key: key, size: 128) { source }
            outcomes.withLock { $0.append(outcome ?? .placeholder) }
        }
        let all = outcomes.withLock { $0 }
        #expect(all.count == 8)
        #expect(Set(all.map { "\($0)" }).count == 1)
        guard case .file(let path) = all[0] else {
            Issue.record("no thumbnail file")
            return
        }
        #expect(path.hasSuffix("/ab/" + key + "-128.jpg"))
        #expect(cache.generated.made == 1)
        // Another size is another thumbnail; a new cache on the same directory makes nothing.
        _ = try cache.thumbnail(key: key, size: 64) { source }
        #expect(cache.generated.made == 2)
        let reopened = ThumbnailCache(directory: dir)
        _ = try reopened.thumbnail(key: key, size: 128) {
            Issue.record("the source was read again")
            return source
        }
        #expect(reopened.generated.made == 0)
    }

    @Test func aCorruptSourceIsAPlaceholderRememberedAsSuch() throws {
        let dir = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = Images.write([0xFF, 0xD8, 0xFF] + [UInt8](repeating: 7, count: 500), "bad.jpg")
        defer { unlink(source) }
        let cache = ThumbnailCache(directory: dir)
        let key = String(repeating: "c", count: 32)
        #expect(try cache.thumbnail(key: key, size: 100) { source } == .placeholder)
        #expect(try cache.thumbnail(key: key, size: 100) { source } == .placeholder)
        #expect(cache.generated.failed == 1)
    }

    /// Keys name files: anything but a hex digest (a path, `..`) is refused before touching disk.
    @Test func keysThatAreNotDigestsAreRefused() {
        let cache = ThumbnailCache(directory: Self.directory())
        for key in ["../../etc/passwd", "", String(repeating: "g", count: 32), String(repeating: "A", count: 32)] {
            #expect(throws: (any Error).self) { try cache.thumbnail(key: key, size: 10) { "/dev/null" } }
        }
        #expect(throws: (any Error).self) {
            try cache.thumbnail(key: String(repeating: "a", count: 32), size: 0) { "" }
        }
    }
}
