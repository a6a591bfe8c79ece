import Testing

@testable import Blip

/// The bytes a real LiteCore 3.2 sent (conformance/transcripts/cbl3-3.2-first-frames.txt), decoded by our receiver
/// and reproduced by our sender.
@Suite struct BlipLiteCoreFramesTests {
    @Test func recordedPullFramesDecodeWithTheRunningChecksum() throws {
        let frames = try LiteCoreFrames.load()[1]
        #expect(frames.count == 2)
        let server = BlipConnection()
        let first = try #require(try server.receive(frames[0].bytes))
        #expect(first.type == .request && first.number == 1 && !first.isUrgent && !first.isCompressed)
        #expect(first.profile == "getCheckpoint")
        #expect(first.properties["client"] == "cp-xbgfHZG8FUj5bb4j5q0k4zVt+pc=")
        #expect(first.body.isEmpty)
        // Frame 2's trailer (ae93eef2) is the CRC of both frames' data: it checks only after frame 1.
        let second = try #require(try server.receive(frames[1].bytes))
        #expect(second.number == 2)
        #expect(
            Array(second.properties.map { "\($0.name)=\($0.value)" }) == [
                "Profile=subChanges", "batch=200", "versioning=rev-trees", "activeOnly=true", "revocations=true",
            ])
        #expect(server.unansweredRequestCount == 2)
    }

    @Test func recordedFrameWithoutItsPredecessorFailsTheChecksum() throws {
        let frames = try LiteCoreFrames.load()[1]
        // As frame 1 of a connection, frame 2's running checksum cannot match (and its number is out of order).
        var renumbered = frames[1].bytes
        renumbered[0] = 0x01
        #expect(throws: BlipError.corrupt("BLIP frame checksum mismatch.")) { try BlipConnection().receive(renumbered) }
    }

    @Test func ourEncoderWritesLiteCoresUncompressedFramesByteForByte() throws {
        let recorded = try LiteCoreFrames.load()[1]
        let client = BlipConnection()
        try client.send(.request(profile: "getCheckpoint", properties: ["client": "cp-xbgfHZG8FUj5bb4j5q0k4zVt+pc="]))
        try client.send(
            .request(
                profile: "subChanges",
                properties: ["batch": "200", "versioning": "rev-trees", "activeOnly": "true", "revocations": "true"]))
        #expect(try client.nextFrame() == recorded[0].bytes)
        #expect(try client.nextFrame() == recorded[1].bytes)
        #expect(try client.nextFrame() == nil)
    }

    @Test func ourCompressedProposeChangesMatchesLiteCoresDeflateAndChecksum() throws {
        let recorded = try LiteCoreFrames.load()[0]
        let client = BlipConnection()
        try client.send(.request(profile: "getCheckpoint", properties: ["client": "cp-+Yo9fcS+ZPaVic23Xhv0SIyT85o="]))
        let body =
            #"[["doc1","1-285e1d4b9d4e1f7660e46157c1a96a42300729b3","",106],"#
            + #"["doc2","1-a70affd1a7a366f18bca9712b7f5cc5a5df57cef","",100]]"#
        try client.send(
            .request(
                profile: "proposeChanges", properties: ["conflictIncludesRev": "true"], body: Array(body.utf8),
                urgent: true, compressed: true))
        #expect(try client.nextFrame() == recorded[0].bytes)
        let frame = try #require(try client.nextFrame())
        // The recorder printed the first 96 of the 145 bytes: zlib at LiteCore's settings gives the same stream.
        #expect(recorded[1].length == 145)
        #expect(frame.count == 145)
        #expect(Array(frame.prefix(recorded[1].bytes.count)) == recorded[1].bytes)
        #expect(Array(frame.prefix(2)) == [0x02, 0x18])
        #expect(hex(frame.suffix(4)) == recorded[1].crcTrailer)
        #expect(recorded[1].crcTrailer == "fa632141")
        // And our receiver inflates it back.
        let server = BlipConnection()
        _ = try server.receive(recorded[0].bytes)
        let message = try #require(try server.receive(frame))
        #expect(message.isCompressed && message.isUrgent)
        #expect(message.properties["conflictIncludesRev"] == "true")
        #expect(message.body == Array(body.utf8))
    }
}
