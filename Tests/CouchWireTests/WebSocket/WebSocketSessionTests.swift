import Testing

@testable import CouchWire

/// The session state machine driven by a made-up clock, without sockets.
@Suite struct WebSocketSessionTests {
    static let second: UInt64 = 1_000_000_000
    static let limits = WebSocketLimits(
        pingInterval: .seconds(60), pongTimeout: .seconds(20), closeTimeout: .seconds(5))

    func feed(_ session: inout WebSocketSession, _ bytes: [UInt8], at now: UInt64) -> [WebSocketSession.Action] {
        bytes.withUnsafeBytes { session.received($0, now: now) }
    }

    @Test func messagesAreDeliveredInOrder() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        let actions = feed(&session, clientFrame(0x2, [1]) + clientFrame(0x1, Array("two".utf8)), at: 1)
        #expect(actions == [.deliver(.binary([1])), .deliver(.text("two"))])
    }

    @Test func pingIsAnsweredWithAPongEchoingItsPayload() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        let actions = feed(&session, clientFrame(0x9, [7, 8, 9]), at: 1)
        #expect(actions == [.send([0x8A, 0x03, 7, 8, 9])])
        #expect(session.isOpen)
    }

    @Test func peerCloseIsEchoedAndTheServerClosesFirst() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        let actions = feed(&session, clientFrame(0x8, [0x03, 0xE8]), at: 1)
        #expect(actions == [.send([0x88, 0x02, 0x03, 0xE8]), .closeConnection(.normal)])
        #expect(session.state == .closed(.normal))
        #expect(session.frame(.binary([1])) == nil)
        #expect(session.nextDeadline == nil)
        // An empty CLOSE is echoed empty and reported as 1005.
        var other = WebSocketSession(limits: Self.limits, now: 0)
        #expect(feed(&other, clientFrame(0x8, []), at: 1) == [.send([0x88, 0x00]), .closeConnection(.noStatus)])
    }

    @Test func ourCloseWaitsForThePeersCloseAndDropsDataMeanwhile() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        #expect(
            session.close(.normal, reason: "done", now: 10) == [
                .send(WebSocketFrameWriter.close(code: .normal, reason: "done"))
            ])
        #expect(session.frame(.binary([1])) == nil)
        #expect(feed(&session, clientFrame(0x2, [1]) + clientFrame(0x9, [1]), at: 11).isEmpty)
        #expect(feed(&session, clientFrame(0x8, [0x03, 0xE8]), at: 12) == [.closeConnection(.normal)])
    }

    @Test func ourCloseGivesUpAfterTheCloseTimeout() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        _ = session.close(.goingAway, now: 100)
        #expect(session.nextDeadline == 100 + 5 * Self.second)
        #expect(session.timeout(now: 100 + 5 * Self.second - 1).isEmpty)
        #expect(session.timeout(now: 100 + 5 * Self.second) == [.closeConnection(.goingAway)])
    }

    @Test func silenceSendsAPingAndAnUnansweredPingCloses1001() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        #expect(session.nextDeadline == 60 * Self.second)
        #expect(session.timeout(now: 59 * Self.second).isEmpty)
        #expect(session.timeout(now: 60 * Self.second) == [.send([0x89, 0x00])])
        #expect(session.nextDeadline == 80 * Self.second)
        let actions = session.timeout(now: 80 * Self.second)
        #expect(
            actions == [
                .send(WebSocketFrameWriter.close(code: .goingAway, reason: "No answer to PING.")),
                .closeConnection(.goingAway),
            ])
    }

    @Test func anyByteFromThePeerRestartsTheSilenceTimer() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        _ = session.timeout(now: 60 * Self.second)
        // Half a frame is enough to prove the peer is there.
        _ = feed(&session, [0x82], at: 70 * Self.second)
        #expect(session.nextDeadline == 130 * Self.second)
        #expect(session.timeout(now: 80 * Self.second).isEmpty)
    }

    @Test func badFrameSendsItsCloseCodeAndClosesAtOnce() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        let actions = feed(&session, clientFrame(0x2, [1]) + clientFrame(0x2, [1], mask: nil), at: 1)
        #expect(
            actions == [
                .deliver(.binary([1])),
                .send(WebSocketFrameWriter.close(code: .protocolError, reason: "Unmasked frame from a client.")),
                .closeConnection(.protocolError),
            ])
        #expect(feed(&session, clientFrame(0x2, [1]), at: 2).isEmpty)
    }

    @Test func oversizedAndInvalidTextMessagesCloseWith1009And1007() {
        let small = WebSocketLimits(maxFrameBytes: 10, maxMessageBytes: 10)
        var big = WebSocketSession(limits: small, now: 0)
        #expect(
            feed(&big, clientFrame(0x2, [UInt8](repeating: 0, count: 11)), at: 1).last
                == .closeConnection(.messageTooBig))
        var text = WebSocketSession(limits: small, now: 0)
        #expect(feed(&text, clientFrame(0x1, [0xFF]), at: 1).last == .closeConnection(.invalidPayload))
    }

    @Test func aVanishedPeerEndsTheSessionWith1006() {
        var session = WebSocketSession(limits: Self.limits, now: 0)
        #expect(session.streamEnded() == [.closeConnection(.abnormal)])
        #expect(session.streamEnded().isEmpty)
    }

    @Test func aTrickledFrameIsClosedWith1008AtTheFrameTimeout() {
        let limits = WebSocketLimits(pingInterval: .seconds(60), frameTimeout: .seconds(30))
        var session = WebSocketSession(limits: limits, now: 0)
        // A byte every 20 s keeps the silence timer from firing, but the frame never ends.
        let frame = clientFrame(0x2, [1, 2, 3, 4, 5])
        _ = feed(&session, [frame[0]], at: 0)
        #expect(session.nextDeadline == 30 * Self.second)
        _ = feed(&session, [frame[1]], at: 20 * Self.second)
        #expect(session.timeout(now: 29 * Self.second).isEmpty)
        #expect(
            session.timeout(now: 30 * Self.second) == [
                .send(WebSocketFrameWriter.close(code: .policyViolation, reason: "A frame took too long to arrive.")),
                .closeConnection(.policyViolation),
            ])
    }

    @Test func theFrameTimerRunsAcrossFragmentsAndStopsWithTheMessage() {
        let limits = WebSocketLimits(pingInterval: .seconds(60), frameTimeout: .seconds(30))
        var session = WebSocketSession(limits: limits, now: 0)
        _ = feed(&session, clientFrame(0x2, [1], fin: false), at: 0)
        #expect(session.nextDeadline == 30 * Self.second)
        _ = feed(&session, clientFrame(0x0, [2], fin: false), at: 10 * Self.second)
        #expect(session.nextDeadline == 30 * Self.second)
        #expect(feed(&session, clientFrame(0x0, [3]), at: 20 * Self.second) == [.deliver(.binary([1, 2, 3]))])
        // Complete: only the silence timer is left.
        #expect(session.nextDeadline == 80 * Self.second)
    }
}
