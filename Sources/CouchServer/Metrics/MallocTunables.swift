import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Sets glibc's malloc tunables for a server with a thread per connection, by starting the program again with them.
///
/// glibc gives every thread a cache of freed blocks (tcache: up to 7 blocks of each size up to 1,032 bytes) that
/// only that thread can reuse and that counts as memory in use. With 2,000 connection threads those caches filled
/// slowly with the sizes each connection's requests happened to free: in the soak (bench/soak.py) they held 28 MiB
/// at minute 1 and 52 MiB at minute 4, most of the heap's growth. Caching only blocks up to 128 bytes keeps the
/// lock-free path for the small, frequent allocations and bounds the caches at about 5 KiB a thread.
///
/// glibc reads tunables from `GLIBC_TUNABLES` once, before `main`, and `mallopt` cannot set these; so the server
/// commands run themselves again (same pid, arguments and descriptors) with the tunable added. An operator's own
/// `glibc.malloc.tcache_*` setting wins, and `reexecMarker` makes sure it happens at most once.
enum MallocTunables {
    /// What is added to `GLIBC_TUNABLES`.
    static let wanted = "glibc.malloc.tcache_max=128"
    /// Set in the environment of the run that was started again, so that it never starts itself once more (glibc
    /// drops tunables in a setuid program, for one).
    static let reexecMarker = "COUCHLITE_MALLOC_TUNED"

    /// The `GLIBC_TUNABLES` value to run with, or nil when the environment needs no change.
    static func tunables(in environment: [String: String]) -> String? {
        if environment[reexecMarker] != nil { return nil }
        let current = environment["GLIBC_TUNABLES"] ?? ""
        if current.contains("glibc.malloc.tcache_") { return nil }
        return current.isEmpty ? wanted : current + ":" + wanted
    }

    /// Starts this program again with the tunables, unless the environment has them. Returns only when it did not
    /// (nothing to change, or `execv` failed: the server then runs with glibc's defaults).
    static func applyByRestarting() {
        #if canImport(Glibc)
            let environment = ProcessInfo.processInfo.environment
            guard let value = tunables(in: environment) else { return }
            setenv("GLIBC_TUNABLES", value, 1)
            setenv(reexecMarker, "1", 1)
            _ = execv("/proc/self/exe", CommandLine.unsafeArgv)
            // Still here: the environment goes back to what it was.
            unsetenv(reexecMarker)
            if let original = environment["GLIBC_TUNABLES"] {
                setenv("GLIBC_TUNABLES", original, 1)
            } else {
                unsetenv("GLIBC_TUNABLES")
            }
        #endif
    }
}
