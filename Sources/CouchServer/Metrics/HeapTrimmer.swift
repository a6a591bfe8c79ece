import CMalloc
import Foundation

/// Hands back to the kernel the heap memory glibc keeps after it is freed.
///
/// glibc's malloc returns freed memory by itself only from the top of an arena. A burst of work on a thread per
/// connection leaves freed chunks spread through the arenas, and their pages stay resident: in the soak (2,000
/// clients, bench/soak.py) resident memory kept growing while the heap in use did not. `malloc_trim` gives back
/// every whole free page inside the arenas too. A check every `interval` seconds reads the heap's figures (`mallinfo2`:
/// a walk of the free lists under each arena's lock, microseconds) and trims only when enough is free to be
/// worth the trim's own walk, so a quiet server does nothing.
enum HeapTrimmer {
    /// How often the heap is looked at.
    static let interval: TimeInterval = 5
    /// Freed-but-kept bytes below which a trim is not worth it, whatever the heap's size.
    static let minimumFreeBytes = 8 << 20

    /// Whether a heap with these figures should be trimmed: at least `minimumFreeBytes` free, and free memory at
    /// least an eighth of what is in use (a busy heap always has some free chunks, which a trim could not keep
    /// away anyway: they are handed out again at once).
    static func shouldTrim(freeBytes: Int, inUseBytes: Int) -> Bool {
        freeBytes >= minimumFreeBytes && freeBytes >= inUseBytes / 8
    }

    /// Starts the checks on a thread of their own, for the rest of the process's life.
    static func start() {
        Thread.detachNewThread {
            while true {
                Thread.sleep(forTimeInterval: interval)
                let heap = couchlite_heap_info()
                if shouldTrim(freeBytes: Int(clamping: heap.fordblks), inUseBytes: Int(clamping: heap.uordblks)) {
                    _ = malloc_trim(0)
                }
            }
        }
    }
}
