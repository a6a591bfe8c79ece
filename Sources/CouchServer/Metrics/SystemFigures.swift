import CMalloc
import Foundation

/// What the kernel says about this process (Linux `/proc/self`), for `_system` and `_prometheus`.
/// A figure the system does not give is 0.
struct SystemFigures {
    /// Resident memory now and at its peak, and the address space (bytes).
    var residentBytes = 0
    var peakResidentBytes = 0
    var virtualBytes = 0
    var threads = 0
    /// File descriptors open (sockets, databases, blobs being read).
    var openFiles = 0
    /// The heap as glibc's malloc sees it: bytes handed out and not freed, bytes freed but kept (resident until
    /// trimmed), and blocks mapped on their own. Resident memory that grows with `heapFreeBytes` is
    /// fragmentation; with `heapInUseBytes`, something is holding on.
    var heapInUseBytes = 0
    var heapFreeBytes = 0
    var heapMappedBytes = 0

    static func read() -> SystemFigures {
        var figures = SystemFigures()
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") {
                let parts = line.split(whereSeparator: { $0 == ":" || $0 == " " || $0 == "\t" })
                guard parts.count >= 2, let number = Int(parts[1]) else { continue }
                switch parts[0] {
                case "VmRSS": figures.residentBytes = number * 1024
                case "VmHWM": figures.peakResidentBytes = number * 1024
                case "VmSize": figures.virtualBytes = number * 1024
                case "Threads": figures.threads = number
                default: break
                }
            }
        }
        figures.openFiles = countOpenFiles()
        let heap = couchlite_heap_info()
        figures.heapInUseBytes = Int(clamping: heap.uordblks)
        figures.heapFreeBytes = Int(clamping: heap.fordblks)
        figures.heapMappedBytes = Int(clamping: heap.hblkhd)
        return figures
    }

    /// Entries of `/proc/self/fd`, less the one listing them.
    private static func countOpenFiles() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { $0.prefix { $0 != 0 } }
            if name.elementsEqual(".".utf8) || name.elementsEqual("..".utf8) { continue }
            count += 1
        }
        return max(0, count - 1)
    }
}
