// Store throughput: replicated `_bulk_docs` batches (one and several concurrent writers), `_revs_diff`, `_changes`,
// `_all_docs` and single-document reads, in process, on real files (WAL, synchronous=FULL).
//
// Environment: STORE_DOCS (documents in the big database, default 100000), STORE_RUNS (timed runs per read figure,
// default 7), STORE_WRITE_RUNS (timed runs per write figure, default 3), STORE_ONLY (comma list of sections:
// single, concurrent, update, read), STORE_DIR (where the files go; default the temporary directory).
import CouchStore
import Dispatch
import Foundation
import RevTree

enum StoreBenchmark {
    static let environment = ProcessInfo.processInfo.environment
    /// Documents in the database the read figures use.
    static let documents = Int(environment["STORE_DOCS"] ?? "") ?? 100_000
    /// Timed repetitions of each read measurement; the median is reported.
    static let runs = Int(environment["STORE_RUNS"] ?? "") ?? 7
    /// Timed repetitions of each write measurement (each on a fresh database); the median is reported.
    static let writeRuns = Int(environment["STORE_WRITE_RUNS"] ?? "") ?? 3
    /// Documents per `applyReplicated` call (a replicator's `_bulk_docs` batch).
    static let batchSize = 100
    /// Concurrent writer threads (like that many HTTP connections posting `_bulk_docs`).
    static let writers = Int(environment["STORE_WRITERS"] ?? "") ?? 8
    /// Revisions asked for in one `_revs_diff`.
    static let revsDiffSize = 1000

    static func enabled(_ section: String) -> Bool {
        guard let only = environment["STORE_ONLY"] else { return true }
        return only.split(separator: ",").contains { $0 == section }
    }

    static func run() {
        let base = (environment["STORE_DIR"] ?? NSTemporaryDirectory()) + "/couchlite-bench-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: base) }
        do {
            let store = try Store(directory: base)
            defer { store.close() }
            print(
                "store: \(documents) docs, batches of \(batchSize), \(writers) concurrent writers, "
                    + "write median of \(writeRuns), read median of \(runs)")
            var counter = 0
            func freshDatabase() throws -> Database {
                counter += 1
                return try store.create("bench\(counter)")
            }
            let singleDocs = min(documents, 20_000)
            if enabled("single") {
                let input = docs(0..<singleDocs)
                var cpu = [Double]()
                let time = try median(writeRuns, warmUp: false) {
                    let db = try freshDatabase()
                    return try timed(cpu: &cpu) { try insert(db, input, writers: 1) }
                }
                report("replicate new docs, 1 writer", Double(singleDocs) / time, "docs/s", cpu: cpu, singleDocs)
            }
            let big = try freshDatabase()
            let bigDocs = docs(0..<documents)
            if enabled("concurrent") {
                var cpu = [Double]()
                let time = try median(writeRuns, warmUp: false) {
                    let db = try freshDatabase()
                    return try timed(cpu: &cpu) { try insert(db, bigDocs, writers: writers) }
                }
                report(
                    "replicate new docs, \(writers) writers", Double(documents) / time, "docs/s", cpu: cpu, documents)
            }
            try insert(big, bigDocs, writers: writers)
            let wal = (try? FileManager.default.attributesOfItem(atPath: big.path + "-wal"))?[.size] as? NSNumber
            print("WAL after \(documents) docs: \((wal?.intValue ?? 0) / 1024) KiB")
            if enabled("update") {
                // Second generation on top of existing documents: the path that loads and extends a tree.
                let updates = (0..<min(documents, 20_000)).map { n in
                    let old = bigDocs[n]
                    return RevisionWrite(
                        docID: old.docID, path: [RevID(pos: old.path[0].pos + 1, hash: hex32(n &+ 77))] + old.path,
                        body: old.body)
                }
                var cpu = [Double]()
                let time = try timed(cpu: &cpu) { try insert(big, updates, writers: writers) }
                report(
                    "replicate updates, \(writers) writers", Double(updates.count) / time, "docs/s", cpu: cpu,
                    updates.count)
            }
            guard enabled("read") else { return }
            try readBenchmarks(big, bigDocs)
        } catch {
            print("store benchmark failed: \(error)")
        }
    }

    static func readBenchmarks(_ db: Database, _ written: [RevisionWrite]) throws {
        // _revs_diff: 1000 revs over 500 documents — for each, its stored leaf and one unknown next generation.
        var request = [(id: String, revs: [RevID])]()
        var state: UInt64 = 0xD1FF
        for n in 0..<(revsDiffSize / 2) {
            state = state &* 6_364_136_223_846_793_005 &+ 1
            let doc = written[Int(state >> 33) % written.count]
            request.append((doc.docID, [doc.path[0], RevID(pos: doc.path[0].pos + 1, hash: hex32(n &+ 999))]))
        }
        var missingCount = 0
        let diff = try median(runs) {
            try timed { missingCount = try db.revsDiff(request).reduce(0) { $0 + $1.missing.count } }
        }
        precondition(missingCount == revsDiffSize / 2, "revs_diff found \(missingCount) missing")
        report("_revs_diff \(revsDiffSize) revs / \(written.count) docs", diff * 1000, "ms")

        var rows = 0
        let changes = try median(runs) {
            try timed {
                rows = 0
                try db.changes(since: 0, limit: nil, descending: false) { _ in
                    rows += 1
                    return true
                }
            }
        }
        precondition(rows == written.count, "changes returned \(rows) rows")
        report("_changes since 0 (\(rows) rows)", Double(rows) / changes, "rows/s")

        let allDocs = try median(runs) {
            try timed {
                rows = 0
                try db.allDocs(startKey: nil, endKey: nil, inclusiveEnd: true, descending: false, skip: 0, limit: nil) {
                    _ in
                    rows += 1
                    return true
                }
            }
        }
        precondition(rows == written.count, "allDocs returned \(rows) rows")
        report("_all_docs (\(rows) rows)", Double(rows) / allDocs, "rows/s")

        let lookups = (0..<10_000).map { written[($0 &* 7919) % written.count] }
        let revision = try median(runs) {
            try timed {
                for write in lookups {
                    guard try db.revision(write.docID, rev: nil) != nil else { throw StoreError.notFound(write.docID) }
                }
            }
        }
        report("revision(id, rev: nil)", Double(lookups.count) / revision, "ops/s")
        let document = try median(runs) {
            try timed {
                for write in lookups {
                    guard try db.document(write.docID) != nil else { throw StoreError.notFound(write.docID) }
                }
            }
        }
        report("document(id)", Double(lookups.count) / document, "ops/s")
    }

    /// Writes `docs` in batches of `batchSize`, from `writers` threads taking batches round-robin.
    static func insert(_ db: Database, _ docs: [RevisionWrite], writers: Int) throws {
        let batches = stride(from: 0, to: docs.count, by: batchSize).map {
            Array(docs[$0..<min($0 + batchSize, docs.count)])
        }
        let failures = Failures()
        let group = DispatchGroup()
        for worker in 0..<writers {
            group.enter()
            // Real threads, not concurrentPerform: that caps concurrency at the core count (2), while a server
            // has one blocked writer per connection.
            let thread = Thread {
                defer { group.leave() }
                for index in stride(from: worker, to: batches.count, by: writers) {
                    do {
                        let results = try db.applyReplicated(batches[index])
                        if results.contains(where: { (try? $0.result.get()) == nil }) { failures.add() }
                    } catch {
                        failures.add()
                    }
                }
            }
            thread.start()
        }
        group.wait()
        if failures.count > 0 { throw StoreError.internalError("\(failures.count) batches failed") }
    }

    /// A failure counter shared by writer threads. `@unchecked Sendable` is safe: every access holds `lock`.
    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func add() { lock.withLock { value += 1 } }
        var count: Int { lock.withLock { value } }
    }

    /// Small replicated documents: ids `doc-NNNNNNNN`, histories of 1–3 revisions, ~120-byte bodies.
    static func docs(_ range: Range<Int>) -> [RevisionWrite] {
        range.map { n in
            let generation = n % 3 + 1
            let path = (0..<generation).map { RevID(pos: generation - $0, hash: hex32(n &* 31 &+ $0)) }
            let body =
                #"{"type":"note","title":"Note number \#(n)","count":\#(n % 1000),"#
                + #""tags":["alpha","bravo"],"done":\#(n % 2 == 0)}"#
            return RevisionWrite(docID: String(format: "doc-%08d", n), path: path, body: Array(body.utf8))
        }
    }

    /// A deterministic 32-hex-digit hash for `seed`.
    static func hex32(_ seed: Int) -> String {
        var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 0x5EED
        var out = ""
        for _ in 0..<2 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            out += String(format: "%016llx", state ^ (state >> 29))
        }
        return out
    }

    /// Process CPU time (user + system, all threads) in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Wall seconds of `body`; appends its process CPU seconds to `cpu`.
    static func timed(cpu: inout [Double], _ body: () throws -> Void) throws -> Double {
        let start = cpuSeconds()
        let wall = try timed(body)
        cpu.append(cpuSeconds() - start)
        return wall
    }

    static func timed(_ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Median of `count` results of `body`, after one untimed warm-up call when `warmUp`.
    static func median(_ count: Int, warmUp: Bool = true, _ body: () throws -> Double) throws -> Double {
        if warmUp { _ = try body() }
        var values = try (0..<max(1, count)).map { _ in try body() }
        values.sort()
        return values[values.count / 2]
    }

    /// Prints one figure; with `cpu` (seconds per run) and `items`, also the median CPU microseconds per item —
    /// steadier than wall time on a shared machine.
    static func report(_ name: String, _ value: Double, _ unit: String, cpu: [Double] = [], _ items: Int = 0) {
        let padded = name.padding(toLength: 44, withPad: " ", startingAt: 0)
        var line = "\(padded) \(String(format: value >= 100 ? "%.0f" : "%.2f", value)) \(unit)"
        if !cpu.isEmpty, items > 0 {
            let sorted = cpu.sorted()
            line += String(format: "  (CPU %.1f µs/doc)", sorted[sorted.count / 2] * 1e6 / Double(items))
        }
        print(line)
    }
}
