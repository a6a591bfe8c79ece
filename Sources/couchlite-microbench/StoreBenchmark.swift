import Foundation
import RevTree

/// Store micro-benchmarks (see BENCHMARKS-store.md) and the crash-test child.
enum StoreBenchmark {
    static func run() {
        let directory = NSTemporaryDirectory() + "couchlite-bench-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let store = try Store(directory: directory)
            let db = try store.create("bench")
            let total = 100_000
            let batchSize = 100
            let bodyBytes = Array(#"{"name":"some user","age":42,"tags":["a","b"]}"#.utf8)
            let start = ContinuousClock.now
            for batch in 0..<(total / batchSize) {
                let writes = (0..<batchSize).map { index in
                    let n = batch * batchSize + index
                    let hash = String(format: "%032x", n)
                    return RevisionWrite(docID: "doc-\(n)", path: [RevID(pos: 1, hash: hash)], body: bodyBytes)
                }
                _ = try db.applyReplicated(writes)
            }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("store new_edits=false: \(total) docs in batches of \(batchSize): "
                + String(format: "%.3f s, %.0f docs/s", seconds, Double(total) / seconds))

            var request = [(id: String, revs: [RevID])]()
            for index in 0..<1000 {
                let n = (index * 97) % total
                // Half present, half missing (next generation).
                let rev = index % 2 == 0 ? RevID(pos: 1, hash: String(format: "%032x", n)) : RevID(pos: 2, hash: "f")
                request.append(("doc-\(n)", [rev]))
            }
            var best = Duration.seconds(100)
            for _ in 0..<20 {
                let t0 = ContinuousClock.now
                _ = try db.revsDiff(request)
                best = min(best, ContinuousClock.now - t0)
            }
            print("store _revs_diff 1000 revs against \(total) docs: best of 20 \(best)")
            store.close()
        } catch {
            print("store benchmark failed: \(error)")
        }
    }

    /// `couchlite-microbench crash-child DIR`: applies numbered batches forever from two threads and prints
    /// `ack <batch>` after each commit returns. The parent SIGKILLs it and checks every acked batch is whole.
    static func crashChild(directory: String) {
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
