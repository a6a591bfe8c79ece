import Blip

/// Target: a BLIP connection receiving frames, and two connections talking.
///
/// Input: frames, each a 2-byte big-endian length then that many bytes, fed to one connection. Properties: no
/// crash; once a frame is refused every later one is refused with the same error; requests arrive numbered
/// 1, 2, 3…; a message never exceeds the limits, nor the partly received messages their count.
/// Half of the executions (by `inputChoice`) also build messages from the input (profiles, properties, bodies of up
/// to 45,000 bytes, urgent/compressed/noreply flags), send them between two connections with ACKs flowing, reply to
/// each request, and check that every message and reply arrives exactly as sent and nothing stays queued.
let limits = BlipLimits(
    maxIncomingMessageBytes: 65536, maxPartialIncomingMessages: 8, maxPartialIncomingBytes: 8 * 65536,
    maxOutboxBytes: 1 << 20)

func fuzzOne(_ bytes: [UInt8]) {
    receiveFrames(bytes)
    if inputChoice(bytes, among: 2) == 0 { roundTrip(bytes) }
}

func receiveFrames(_ bytes: [UInt8]) {
    let connection = BlipConnection(limits: limits)
    var offset = 0
    var failure: BlipError?
    var lastRequest: UInt64 = 0
    while offset + 2 <= bytes.count {
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        let frame = Array(bytes[(offset + 2)..<min(bytes.count, offset + 2 + length)])
        offset += 2 + length
        do {
            let message = try connection.receive(frame)
            require(failure == nil, "a frame accepted after \(String(describing: failure))")
            require(connection.partialIncomingCount <= limits.maxPartialIncomingMessages, "partial count")
            if let message {
                require(message.body.count <= limits.maxIncomingMessageBytes, "body \(message.body.count)")
                if message.type == .request {
                    require(message.number == lastRequest + 1, "request #\(message.number) after #\(lastRequest)")
                    lastRequest = message.number
                }
            }
        } catch {
            require(failure == nil || failure == error, "a second, different error: \(error)")
            failure = error
        }
    }
}

/// Moves frames both ways until neither side has one, returning what each received.
func exchange(_ a: BlipConnection, _ b: BlipConnection) -> (toA: [BlipMessage], toB: [BlipMessage])? {
    var toA: [BlipMessage] = []
    var toB: [BlipMessage] = []
    var moved = true
    do {
        while moved {
            moved = false
            while let frame = try a.nextFrame() {
                moved = true
                if let message = try b.receive(frame) { toB.append(message) }
            }
            while let frame = try b.nextFrame() {
                moved = true
                if let message = try a.receive(frame) { toA.append(message) }
            }
        }
    } catch {
        require(false, "a well-formed conversation failed: \(error)")
        return nil
    }
    return (toA, toB)
}

func roundTrip(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let client = BlipConnection(limits: limits)
    let server = BlipConnection(limits: limits)
    var sent: [UInt64: BlipMessage] = [:]
    var cursor = 1
    func take(_ count: Int) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        return (0..<count).map { bytes[(cursor + $0) % bytes.count] }
    }
    func text(_ count: Int) -> String { String(decoding: take(count).map { 0x61 + $0 % 26 }, as: UTF8.self) }
    for _ in 0..<(Int(first % 6) + 1) {
        let flags = take(1)[0]
        cursor += 1
        let bodyCount = Int(flags >> 4) * 3000 + Int(take(1)[0])
        cursor += 1
        let properties: BlipProperties = [(text(3), text(Int(flags & 7))), ("id", text(5))].reduce(into: [:]) {
            $0.add($1.0, $1.1)
        }
        let request = BlipMessage.request(
            profile: text(4), properties: properties, body: take(bodyCount), urgent: flags & 1 != 0,
            compressed: flags & 2 != 0, noReply: flags & 4 != 0)
        cursor += bodyCount % 97
        do {
            let number = try client.send(request)
            sent[number] = request
        } catch {
            require(error == .outboxFull, "send refused: \(error)")
        }
    }
    guard let (_, arrived) = exchange(client, server) else { return }
    require(arrived.count == sent.count, "\(arrived.count) of \(sent.count) requests arrived")
    var expectedReplies: [UInt64: [UInt8]] = [:]
    for message in arrived {
        guard let original = sent[message.number] else {
            require(false, "request #\(message.number) was never sent")
            return
        }
        require(message.properties == original.properties && message.body == original.body, "request changed")
        require(
            message.isUrgent == original.isUrgent && message.isCompressed == original.isCompressed
                && message.isNoReply == original.isNoReply, "flags changed")
        guard !message.isNoReply else { continue }
        let body = Array(message.body.reversed())
        do {
            try server.respond(to: message.number, with: .response(body: body, compressed: message.number % 2 == 0))
        } catch {
            require(false, "reply refused: \(error)")
        }
        expectedReplies[message.number] = body
    }
    guard let (replies, _) = exchange(client, server) else { return }
    require(replies.count == expectedReplies.count, "\(replies.count) of \(expectedReplies.count) replies")
    for reply in replies {
        require(reply.type == .response && expectedReplies[reply.number] == reply.body, "reply #\(reply.number)")
    }
    require(client.queuedBytes == 0 && server.queuedBytes == 0, "bytes left queued")
    require(client.awaitingReplyCount == 0 && server.unansweredRequestCount == 0, "requests left open")
}
