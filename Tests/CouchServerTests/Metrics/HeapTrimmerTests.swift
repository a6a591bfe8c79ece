import CMalloc
import Foundation
import Testing

@testable import CouchServer

@Suite("HeapTrimmer")
struct HeapTrimmerTests {
    @Test func aSmallOrBusyHeapIsLeftAlone() {
        // Less than the minimum free: never worth a trim, however small the heap in use.
        #expect(!HeapTrimmer.shouldTrim(freeBytes: HeapTrimmer.minimumFreeBytes - 1, inUseBytes: 0))
        // Free memory that a busy heap hands out again at once (less than an eighth of what is in use).
        #expect(!HeapTrimmer.shouldTrim(freeBytes: 20 << 20, inUseBytes: 400 << 20))
    }

    @Test func freedMemoryLeftByABurstIsTrimmed() {
        #expect(HeapTrimmer.shouldTrim(freeBytes: HeapTrimmer.minimumFreeBytes, inUseBytes: 0))
        #expect(HeapTrimmer.shouldTrim(freeBytes: 140 << 20, inUseBytes: 2 << 20))  // the soak's clients gone
        #expect(HeapTrimmer.shouldTrim(freeBytes: 50 << 20, inUseBytes: 400 << 20))
    }

    @Test func aTrimGivesFreedPagesBack() {
        // Many mid-sized blocks (below the mmap threshold, so they live in the arena), every other one freed: the
        // free memory is spread through the arena, where glibc alone never returns it.
        var blocks: [UnsafeMutableRawPointer?] = (0..<4096).map { _ in malloc(16 << 10) }
        for index in blocks.indices {
            if let block = blocks[index] { memset(block, 1, 16 << 10) }
        }
        for index in stride(from: 0, to: blocks.count, by: 2) {
            free(blocks[index])
            blocks[index] = nil
        }
        let before = residentKiB()
        _ = malloc_trim(0)
        let after = residentKiB()
        for block in blocks { free(block) }
        // 2,048 freed blocks of 16 KiB are 32 MiB of whole free pages; most of them must leave the resident set.
        #expect(before - after > 16 << 10, "resident \(before) KiB before the trim, \(after) KiB after")
    }

    private func residentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return 0 }
        return kib
    }
}
