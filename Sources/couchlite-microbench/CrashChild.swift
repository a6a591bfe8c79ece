import CouchStore
import Foundation
import RevTree

/// The crash-test child: `couchlite-microbench crash-child DIR` (see Tests/CouchStoreTests/CrashTests.swift).
enum CrashChild {
    /// `couchlite-microbench crash-child DIR`: applies numbered batches forever from two threads and prints
    /// `ack <batch>` after each commit returns. The parent SIGKILLs it and checks every acked batch is whole.
    static func run(directory: String) {
        do {
            let store = try Store(directory: directory)
            let db = try (try? store.open("crash")) ?? store.create("crash")
            let first = db.updateSeq / CrashTestShape.batchSize + 1_000_000 * Int.random(in: 1...1000)
            let output = FileHandle.standardOutput
            let lock = NSLock()
            DispatchQueue.concurrentPerform(iterations: 2) { worker in
                var batch = first + worker * 100_000
                while true {
                    let writes = (0..<CrashTestShape.batchSize).map { index in
                        RevisionWrite(
                            docID: "b\(batch)-\(index)", path: [RevID(pos: 2, hash: "b"), RevID(pos: 1, hash: "a")],
                            body: Array(#"{"batch":\#(batch)}"#.utf8))
                    }
                    guard (try? db.applyReplicated(writes)) != nil else { return }
                    lock.lock()
                    output.write(Data("ack \(batch)\n".utf8))
                    lock.unlock()
                    batch += 1
                }
            }
        } catch {
            FileHandle.standardError.write(Data("crash-child failed: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// Shared between the crash child and its test: every batch writes this many documents `b<batch>-<i>`.
enum CrashTestShape {
    static let batchSize = 20
}
