import Callbacks
import Foundation
import Synchronization
import Testing

@testable import CouchStore

/// A store's database-event observer is called once per write: its millionth call costs what its first did (a
/// chain that grew by one thunk pair per event overflowed a connection thread's stack at the 6,361st write).
@Suite struct DatabaseEventObserverTests {
    @Test func aMillionEventsRunAtOneDepth() {
        let observer = DatabaseEventObserver()
        let depth = StackDepthRecorder()
        let updates = Mutex(0)
        observer.set { name, event in
            depth.record()
            if name == "db", event == .updated { updates.withLock { $0 += 1 } }
        }
        for _ in 0..<1_000_000 { observer.notify("db", .updated) }
        #expect(depth.calls == 1_000_000)
        #expect(depth.span == 0)
        #expect(updates.withLock { $0 } == 1_000_000)
    }

    @Test func theStoresObserverHearsEveryKindOfEvent() throws {
        let directory = FileManager.default.temporaryDirectory.path + "/events-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Store(directory: directory)
        defer { store.close() }
        let seen = Mutex<[String]>([])
        store.observe { name, event in seen.withLock { $0.append("\(name):\(event.rawValue)") } }
        _ = try store.create("a")
        try store.delete("a")
        #expect(seen.withLock { $0 } == ["a:created", "a:deleted"])
    }
}
