import CSQLite
import Foundation
import RevTreeTestSupport
import Testing

@testable import CouchStore
@testable import RevTree

/// SIGKILLs `couchlite-microbench crash-child` at random points and checks what survived.
@Suite(.serialized) struct CrashTests {
    static let batchSize = 20  // CrashTestShape.batchSize in the child
    static let rounds = 12

    /// The child binary, built by the lead's script next to the test bundle; never built here.
    static func childBinary() -> String? {
        let argv0 = URL(fileURLWithPath: CommandLine.arguments.first ?? "")
        var candidates = [argv0.deletingLastPathComponent().appendingPathComponent("couchlite-microbench").path]
        var dir = argv0.deletingLastPathComponent()
        for _ in 0..<4 {
            candidates.append(dir.appendingPathComponent("couchlite-microbench").path)
            dir = dir.deletingLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(root.appendingPathComponent(".build/debug/couchlite-microbench").path)
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test func acknowledgedBatchesSurviveKillNine() throws {
        let binary = try #require(CrashTests.childBinary(), "build couchlite-microbench first (swift build)")
        let directory = temporaryDirectory()
        var rng = SplitMix64(state: 42)
        var acked = Set<Int>()
        for _ in 0..<CrashTests.rounds {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["crash-child", directory]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            Thread.sleep(forTimeInterval: Double.random(in: 0.2...0.9, using: &rng))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            for line in output.split(separator: "\n") where line.hasPrefix("ack ") {
                if let batch = Int(line.dropFirst(4)) { acked.insert(batch) }
            }
            // Reopen: every acknowledged batch is whole, no batch is half there, the file is intact.
            let store = try Store(directory: directory)
            let db = try store.open("crash")
            var counts = [String: Int]()
            try db.changes(since: 0, limit: nil, descending: false) { row in
                let batch = String(row.id.split(separator: "-")[0])
                counts[batch, default: 0] += 1
                #expect(row.winner == RevID(pos: 2, hash: "b"))
                return true
            }
            for batch in acked { #expect(counts["b\(batch)"] == CrashTests.batchSize, "acked batch \(batch) lost") }
            for (batch, count) in counts { #expect(count == CrashTests.batchSize, "batch \(batch) half applied") }
            #expect(try db.info().docCount == counts.values.reduce(0, +))
            store.close()
            let integrity = try integrityCheck(directory + "/crash.couch")
            #expect(integrity == "ok", "integrity_check: \(integrity)")
        }
        #expect(!acked.isEmpty)
        try? FileManager.default.removeItem(atPath: directory)
    }

    func integrityCheck(_ path: String) throws -> String {
        SQLiteConnection.configureProcess()  // before this first SQLite call of the process, if it is one
        var db: OpaquePointer?
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let db else { return "open failed" }
        defer { sqlite3_close_v2(db) }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &statement, nil) == SQLITE_OK else { return "prep" }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return "step" }
        return String(cString: text)
    }
}
