import CouchStore
import Foundation
import Testing

@testable import CouchServer

/// `DatabaseUpdates`: the log following a store across restarts, and what a client's `since` names.
@Suite struct DatabaseUpdatesTests {
    let seqs = DatabaseUpdateSeq(epoch: 0x0123_4567_89AB_CDEF)

    @Test func sequencesNameTheirNumberAndEpoch() throws {
        let text = seqs.format(12)
        #expect(text.hasPrefix("12-") && !text.contains("=") && !text.contains("+") && !text.contains("/"))
        #expect(text != DatabaseUpdateSeq(epoch: 1).format(12))
        #expect(try seqs.after(text, lastSeq: 12) == 12)
        #expect(try seqs.after("\"" + text + "\"", lastSeq: 20) == 12)
        #expect(try seqs.after("0", lastSeq: 20) == 0)
        #expect(try seqs.after("7", lastSeq: 20) == 7)
        #expect(try seqs.after(seqs.format(0), lastSeq: 0) == 0)
    }

    /// Negative, garbage, empty and numbers past `Int.max`: CouchDB's 400, nothing read.
    @Test func hostileSinceValuesAreMalformed() {
        for since in [
            "-1", "-12-AAAA", "", "abc", "1e5", " 5", "5 ", "0x10", "99999999999999999999",
            "99999999999999999999-AAAAAAAAAAAAAAAAAAAAAA", "\"\"", "now-ish", "12_AAAA", "+3", "١٢",
        ] {
            #expect(throws: CouchError.badRequest("Malformed sequence supplied in 'since' parameter.")) {
                try seqs.after(since, lastSeq: 100)
            }
        }
    }

    /// A sequence this log did not hand out (another server's, a CouchDB's opaque one, this data dir's before its
    /// log was lost, or one beyond the latest) is read from 0: the client sees every kept event again.
    @Test func aSequenceFromAnotherLogReadsFromZero() throws {
        let couchDB =
            "4954-g1AAAACxeJzLYWBgYMpgTmEQTc4vTc5ISTK1tDBxMDQy1zMAQsMckHQiQ1L9____szKYkxgYuFRygWLsyUZmRolJlrj0ETAxjwVIMjQAqf9wgznNwAYbJlukGiUZ4tKeBQBK-ixc"
        #expect(try seqs.after(couchDB, lastSeq: 10_000) == 0)
        #expect(try seqs.after(DatabaseUpdateSeq(epoch: 42).format(5), lastSeq: 10) == 0)
        // The pre-log couchlite form (`UpdateSeq.format`): the in-memory feed's numbers started again at each start.
        #expect(try seqs.after("5-AAAAAAAAAAU", lastSeq: 10) == 0)
        #expect(try seqs.after("5-garbage", lastSeq: 10) == 0)
        #expect(try seqs.after(seqs.format(11), lastSeq: 10) == 0)
        #expect(try seqs.after("11", lastSeq: 10) == 0)
        #expect(try seqs.after(seqs.format(Int.max), lastSeq: 10) == 0)
    }

    /// The server's view: a store's events land in the data dir's log, a restart keeps them and goes on counting,
    /// and a data dir from before the log names its databases `created` once.
    @Test func theFeedFollowsTheStoreAcrossARestart() throws {
        let dataDir = NSTemporaryDirectory() + "dbupdates-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let logger = Logger(label: "test", level: .error)
        var store = try Store(directory: dataDir + "/databases")
        _ = try store.create("before-the-log")
        var updates = DatabaseUpdates(following: store, dataDir: dataDir, log: logger)
        _ = try store.create("a")
        try store.delete("before-the-log")
        let first = updates.lastSeq
        #expect(first == 3)
        let epoch = updates.log.epoch
        store.close()
        updates.log.close()

        store = try Store(directory: dataDir + "/databases")
        updates = DatabaseUpdates(following: store, dataDir: dataDir, log: logger)
        #expect(updates.log.epoch == epoch)
        #expect(updates.lastSeq == first)
        _ = try store.create("b")
        try updates.log.flush()
        let later = try updates.log.events(after: first)
        #expect(later.map(\.name) == ["b"] && later.map(\.seq) == [first + 1])
        let all = try updates.log.events(after: 0).map { "\($0.kind.rawValue):\($0.name)" }
        #expect(all == ["created:before-the-log", "created:a", "deleted:before-the-log", "created:b"])
        store.close()
        updates.log.close()
    }

    /// A damaged log file does not stop the server: the feed is kept in memory, and the file is left as it was.
    @Test func aDamagedLogFileLeavesTheFeedInMemory() throws {
        let dataDir = NSTemporaryDirectory() + "dbupdates-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let store = try Store(directory: dataDir + "/databases")
        let garbage = Data(repeating: 0xA5, count: 4096)
        #expect(FileManager.default.createFile(atPath: dataDir + "/" + DatabaseUpdates.fileName, contents: garbage))
        let updates = DatabaseUpdates(following: store, dataDir: dataDir, log: Logger(label: "test", level: .error))
        _ = try store.create("a")
        #expect(updates.lastSeq == 1)
        #expect(try updates.log.events(after: 0).map(\.name) == ["a"])
        #expect(FileManager.default.contents(atPath: dataDir + "/" + DatabaseUpdates.fileName) == garbage)
        store.close()
        updates.log.close()
    }
}
