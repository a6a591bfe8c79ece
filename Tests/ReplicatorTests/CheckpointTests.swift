import CouchWire
import Testing

@testable import Replicator

@Suite struct CheckpointTests {
    @Test func noLogOnEitherSideStartsFromZero() throws {
        #expect(Replication.startSequence(source: nil, target: nil) == 0)
        let log = try JSON.parse(#"{"session_id":"a","source_last_seq":"5-x","history":[]}"#)
        #expect(Replication.startSequence(source: log, target: nil) == 0)
        #expect(Replication.startSequence(source: nil, target: log) == 0)
    }

    @Test func sameSessionResumesAtSourceLastSeq() throws {
        let log = try JSON.parse(#"{"session_id":"a","source_last_seq":"5-x","history":[]}"#)
        #expect(Replication.startSequence(source: log, target: log) == "5-x")
    }

    @Test func sharedOlderSessionGivesItsRecordedSeq() throws {
        let source = try JSON.parse(
            #"{"session_id":"c","source_last_seq":9,"history":[{"session_id":"c","recorded_seq":9},"#
                + #"{"session_id":"b","recorded_seq":7},{"session_id":"a","recorded_seq":3}]}"#)
        let target = try JSON.parse(
            #"{"session_id":"b","source_last_seq":7,"history":[{"session_id":"b","recorded_seq":7}]}"#)
        #expect(Replication.startSequence(source: source, target: target) == 7)
    }

    @Test func noSharedSessionRestartsFromZero() throws {
        let source = try JSON.parse(#"{"session_id":"x","history":[{"session_id":"x","recorded_seq":4}]}"#)
        let target = try JSON.parse(#"{"session_id":"y","history":[{"session_id":"y","recorded_seq":4}]}"#)
        #expect(Replication.startSequence(source: source, target: target) == 0)
    }

    @Test func malformedLogsDoNotCrash() throws {
        let source = try JSON.parse(#"{"session_id":1,"history":"nope"}"#)
        let target = try JSON.parse(#"[1,2]"#)
        #expect(Replication.startSequence(source: source, target: target) == 0)
    }
}
