import Callbacks
import Testing

@testable import CouchServer

#if canImport(Glibc)
    import Glibc
#endif

/// The callbacks the server keeps behind a lock cost the same on their millionth call as on their first (the
/// database-event observer, the third of them, has its test in CouchStoreTests).
@Suite struct StoredCallbackTests {
    static let million = 1_000_000

    @Test func theDiskFullNoticeRunsAtOneDepthAMillionTimes() throws {
        try InProcessServer.with { server in
            let depth = StackDepthRecorder()
            server.app.onDiskFull.set { depth.record() }
            for _ in 0..<Self.million { server.app.onDiskFull() }
            #expect(depth.calls == Self.million)
            #expect(depth.span == 0)
        }
    }

    @Test func aStopSignalHandlerRunsAtOneDepthAMillionTimes() {
        let depth = StackDepthRecorder()
        StopSignals.onStop { number in
            if number == SIGTERM { depth.record() }
        }
        for _ in 0..<Self.million { StopSignals.deliver(SIGTERM) }
        #expect(depth.calls == Self.million)
        #expect(depth.span == 0)
    }
}
