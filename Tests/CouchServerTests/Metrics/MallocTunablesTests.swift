import Testing

@testable import CouchServer

@Suite("MallocTunables")
struct MallocTunablesTests {
    @Test func anEnvironmentWithoutTunablesGetsTheThreadCacheBound() {
        #expect(MallocTunables.tunables(in: [:]) == MallocTunables.wanted)
        #expect(MallocTunables.tunables(in: ["GLIBC_TUNABLES": ""]) == MallocTunables.wanted)
    }

    @Test func anOperatorsOtherTunablesAreKept() {
        let value = MallocTunables.tunables(in: ["GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"])
        #expect(value == "glibc.malloc.mmap_threshold=131072:" + MallocTunables.wanted)
    }

    @Test func anOperatorsOwnThreadCacheSettingWins() {
        #expect(MallocTunables.tunables(in: ["GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"]) == nil)
        #expect(MallocTunables.tunables(in: ["GLIBC_TUNABLES": "glibc.malloc.tcache_max=1024"]) == nil)
    }

    @Test func aRunStartedAgainIsNeverStartedOnceMore() {
        // glibc ignores GLIBC_TUNABLES in some runs (setuid programs): the marker, not the tunable, stops a loop.
        #expect(MallocTunables.tunables(in: [MallocTunables.reexecMarker: "1"]) == nil)
    }
}
