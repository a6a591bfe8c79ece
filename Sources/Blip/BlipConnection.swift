/// One BLIP 3 connection as LiteCore speaks it (`Networking/BLIP/docs/BLIP Protocol.md`, `BLIPConnection.cc`), a
/// state machine with no I/O: the owner hands it each incoming WebSocket binary message (one BLIP frame) with
/// `receive`, and writes what `nextFrame` returns.
///
/// - Requests go both ways; each side numbers its own 1, 2, 3…, and a reply carries its request's number. An
///   incoming request must be the next number (or continue a partial one); a reply must name a request of ours
///   that was completely sent and wants one. Either mistake ends the connection.
/// - Messages are split into frames of at most 16 KiB (4 KiB while an urgent message waits) and interleaved: the
///   outbox sends one frame of each message in turn, urgent ones ahead, a new message never ahead of an unstarted
///   older one (so first frames leave in number order, which LiteCore requires).
/// - Each direction has one running CRC-32 and one raw-deflate stream for the connection's life (`BlipCodec`).
/// - Flow control: every 50,000 bytes received of a message we queue an ACK; a message of ours pauses while
///   128,000 bytes of it are unacknowledged. A peer that never acknowledges stalls our big messages, and `send`
///   refuses to queue past `maxOutboxBytes`, so it cannot make us buffer without bound.
///
/// Not thread-safe: one connection belongs to one thread (or one serial queue).
public final class BlipConnection {
    public let limits: BlipLimits

    private var outChecksum = BlipChecksum()
    private var inChecksum = BlipChecksum()
    // Allocated on first use: a deflate stream at memLevel 9 is about 270 KiB, and a peer that sends nothing
    // compressed never needs the inflater.
    private var deflaterStorage: BlipDeflater?
    private var inflaterStorage: BlipInflater?

    /// Messages with frames to send, front first; and those paused until an ACK.
    private var outbox: [Outgoing] = []
    private var icebox: [Outgoing] = []
    /// Bytes of message data queued and not yet framed (outbox and icebox).
    public private(set) var queuedBytes = 0
    private var lastOutgoingNumber: UInt64 = 0
    /// Our requests completely sent that wait for a reply.
    private var awaitingReply: Set<UInt64> = []

    private var lastIncomingNumber: UInt64 = 0
    private var partialRequests: [UInt64: Incoming] = [:]
    private var partialReplies: [UInt64: Incoming] = [:]
    private var partialBytes = 0
    /// Requests received that want a reply we have not queued yet, with whether they were urgent (the reply is).
    private var unanswered: [UInt64: Bool] = [:]
    private var failure: BlipError?

    public init(limits: BlipLimits = BlipLimits()) {
        self.limits = limits
    }

    /// Whether `nextFrame` has something to return.
    public var hasFrameToSend: Bool { !outbox.isEmpty }
    /// Messages paused until the peer acknowledges what it has received of them.
    public var pausedMessageCount: Int { icebox.count }
    /// Our requests sent that have no reply yet.
    public var awaitingReplyCount: Int { awaitingReply.count }
    /// Requests received that have no reply queued yet.
    public var unansweredRequestCount: Int { unanswered.count }
    /// Incoming messages partly received.
    public var partialIncomingCount: Int { partialRequests.count + partialReplies.count }

    // MARK: - Sending

    /// Queues a request.
    /// - Returns: Its number, which the reply will carry.
    /// - Throws: `.invalidMessage` for a message that is not a request or bad properties; `.outboxFull`; the
    ///   connection's failure once it has failed.
    @discardableResult
    public func send(_ request: BlipMessage) throws(BlipError) -> UInt64 {
        if let failure { throw failure }
        guard request.type == .request else { throw .invalidMessage("Only requests are sent with send(_:).") }
        let data = try request.encodedData()
        guard queuedBytes + data.count <= limits.maxOutboxBytes else { throw .outboxFull }
        lastOutgoingNumber &+= 1
        queuedBytes += data.count
        var flags = BlipMessageType.request.rawValue
        if request.isUrgent { flags |= BlipFlags.urgent }
        if request.isCompressed { flags |= BlipFlags.compressed }
        if request.isNoReply { flags |= BlipFlags.noReply }
        enqueue(Outgoing(number: lastOutgoingNumber, flags: flags, data: data))
        return lastOutgoingNumber
    }

    /// Queues the one reply (RPY or ERR) to an incoming request; urgent when the request was.
    /// - Throws: `.invalidMessage` when no such request waits for a reply or `reply` is not a reply;
    ///   `.outboxFull`; the connection's failure once it has failed.
    public func respond(to number: UInt64, with reply: BlipMessage) throws(BlipError) {
        if let failure { throw failure }
        guard reply.type.isReply else { throw .invalidMessage("A reply must be RPY or ERR.") }
        guard let urgent = unanswered[number] else { throw .invalidMessage("No request #\(number) waits for a reply.") }
        let data = try reply.encodedData()
        guard queuedBytes + data.count <= limits.maxOutboxBytes else { throw .outboxFull }
        unanswered[number] = nil
        queuedBytes += data.count
        var flags = reply.type.rawValue
        if urgent || reply.isUrgent { flags |= BlipFlags.urgent }
        if reply.isCompressed { flags |= BlipFlags.compressed }
        enqueue(Outgoing(number: number, flags: flags, data: data))
    }

    /// The next frame to write as one binary WebSocket message, or nil when nothing can be sent (the outbox is
    /// empty, or every message in it waits for an ACK).
    /// - Throws: `.corrupt` if zlib fails to compress (the connection cannot go on).
    public func nextFrame() throws(BlipError) -> [UInt8]? {
        guard !outbox.isEmpty else { return nil }
        let message = outbox.removeFirst()
        let frameLimit =
            message.isUrgent || outbox.isEmpty || !outbox[0].isUrgent
            ? BlipLimits.bigFrameBytes : BlipLimits.smallFrameBytes
        var frame = BlipVarint.encode(message.number)
        frame.append(0)
        let headerCount = frame.count
        if message.isAck {
            // ACKs carry a varint byte count only: no checksum, no compression, one frame.
            frame[headerCount - 1] = message.flags
            frame += message.data
            queuedBytes -= message.data.count
            return frame
        }
        let room = frameLimit - headerCount - 4
        let chunk: ArraySlice<UInt8>
        if message.flags & BlipFlags.compressed != 0 {
            // Incompressible data grows by a few bytes per deflate block and flush: keep the frame within its size.
            chunk = message.data[message.offset..<(message.offset + min(message.remaining, room - 32))]
            do {
                try deflater().compress(chunk, into: &frame)
            } catch {
                failure = error
                throw error
            }
        } else {
            chunk = message.data[message.offset..<(message.offset + min(message.remaining, room))]
            frame += chunk
        }
        outChecksum.add(chunk)
        let crc = outChecksum.value
        frame += [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)]
        message.offset += chunk.count
        queuedBytes -= chunk.count
        let more = message.remaining > 0
        frame[headerCount - 1] = message.flags | (more ? BlipFlags.moreComing : 0)
        let payloadCount = frame.count - headerCount
        message.bytesSent &+= UInt64(payloadCount)
        message.unacked += payloadCount
        if more {
            if message.unacked >= BlipLimits.maxUnackedBytes { icebox.append(message) } else { enqueue(message) }
        } else {
            message.data = []
            if message.isRequest && message.flags & BlipFlags.noReply == 0 { awaitingReply.insert(message.number) }
        }
        return frame
    }

    private func deflater() -> BlipDeflater {
        if let deflaterStorage { return deflaterStorage }
        let created = BlipDeflater()
        deflaterStorage = created
        return created
    }

    private func inflater() -> BlipInflater {
        if let inflaterStorage { return inflaterStorage }
        let created = BlipInflater()
        inflaterStorage = created
        return created
    }

    /// Puts a message in the outbox: normal ones at the end; urgent ones after the last urgent message (leaving one
    /// other in between, so normal messages still move) and never before the second place, but never ahead of a
    /// message that has not started when this one has not either (LiteCore's `requeue` rule).
    private func enqueue(_ message: Outgoing) {
        guard message.isUrgent, outbox.count > 1 else {
            outbox.append(message)
            return
        }
        var index = outbox.count
        while index > 0 {
            let other = outbox[index - 1]
            if other.isUrgent {
                if index < outbox.count { index += 1 }
                break
            }
            if !message.hasStarted && !other.hasStarted { break }
            index -= 1
        }
        outbox.insert(message, at: max(index, 1))
    }

    /// Queues (or brings up to date, if one is still unsent) the ACK of `count` bytes of an incoming message.
    private func queueAck(number: UInt64, ofReply: Bool, count: UInt64) {
        let type = ofReply ? BlipMessageType.ackResponse : BlipMessageType.ackRequest
        let data = BlipVarint.encode(count)
        if let pending = outbox.first(where: { $0.isAck && $0.number == number && $0.flags & 0x07 == type.rawValue }) {
            queuedBytes += data.count - pending.data.count
            pending.data = data
            return
        }
        queuedBytes += data.count
        enqueue(Outgoing(number: number, flags: type.rawValue | BlipFlags.urgent | BlipFlags.noReply, data: data))
    }

    // MARK: - Receiving

    /// Takes one incoming frame (one binary WebSocket message).
    /// - Returns: The message this frame completed (a request, or a reply to one of ours), or nil.
    /// - Throws: `BlipError` when the peer broke the protocol or a limit; the connection must then close with its
    ///   `closeCode`, and every later call rethrows it.
    public func receive(_ frame: [UInt8]) throws(BlipError) -> BlipMessage? {
        if let failure { throw failure }
        do {
            return try receiveChecked(frame[...])
        } catch {
            failure = error
            throw error
        }
    }

    private func receiveChecked(_ frame: ArraySlice<UInt8>) throws(BlipError) -> BlipMessage? {
        guard frame.count <= limits.maxIncomingFrameBytes else {
            throw .tooBig("A BLIP frame longer than \(limits.maxIncomingFrameBytes) bytes.")
        }
        guard case .value(let number, let numberLength) = BlipVarint.read(frame) else {
            throw .protocolViolation("Bad BLIP frame header.")
        }
        guard case .value(let rawFlags, let flagsLength) = BlipVarint.read(frame.dropFirst(numberLength)),
            rawFlags <= 0xFF
        else { throw .protocolViolation("Bad BLIP frame header.") }
        let flags = BlipFlags(rawValue: UInt8(rawFlags))
        let payload = frame.dropFirst(numberLength + flagsLength)
        guard let type = flags.type else { return nil }  // reserved types: ignored, as LiteCore does
        let incoming: Incoming
        switch type {
        case .ackRequest, .ackResponse:
            receivedAck(number: number, ofReply: type == .ackResponse, payload: payload)
            return nil
        case .request: incoming = try incomingRequest(number, flags)
        case .response, .error: incoming = try incomingReply(number, flags)
        }
        return try append(payload, flags: flags, to: incoming)
    }

    private func incomingRequest(_ number: UInt64, _ flags: BlipFlags) throws(BlipError) -> Incoming {
        if let partial = partialRequests[number] { return partial }
        guard number == lastIncomingNumber &+ 1 else {
            throw .protocolViolation("Request #\(number) out of sequence (the last was #\(lastIncomingNumber)).")
        }
        lastIncomingNumber = number
        let message = Incoming(number: number, flags: flags)
        if flags.has(BlipFlags.moreComing) {
            try checkPartialCount()
            partialRequests[number] = message
        }
        return message
    }

    private func incomingReply(_ number: UInt64, _ flags: BlipFlags) throws(BlipError) -> Incoming {
        if let partial = partialReplies[number] { return partial }
        guard awaitingReply.contains(number) else {
            throw .protocolViolation("Reply #\(number) to no request waiting for one.")
        }
        let message = Incoming(number: number, flags: flags)
        if flags.has(BlipFlags.moreComing) {
            try checkPartialCount()
            partialReplies[number] = message
        }
        return message
    }

    private func checkPartialCount() throws(BlipError) {
        guard partialIncomingCount < limits.maxPartialIncomingMessages else {
            throw .tooBig("More than \(limits.maxPartialIncomingMessages) messages partly received.")
        }
    }

    /// Decodes one frame's payload into its message: ACK bookkeeping, inflate, checksum, limits, completion.
    private func append(
        _ payload: ArraySlice<UInt8>, flags: BlipFlags, to message: Incoming
    ) throws(BlipError) -> BlipMessage? {
        guard payload.count >= 4 else { throw .protocolViolation("A BLIP frame ends before its checksum.") }
        message.rawBytes &+= UInt64(payload.count)
        message.unacked += payload.count
        if message.unacked >= BlipLimits.ackThresholdBytes {
            queueAck(number: message.number, ofReply: message.type != .request, count: message.rawBytes)
            message.unacked = 0
        }
        let content = payload.dropLast(4)
        let trailer = payload.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let before = message.data.count
        let messageRoom = limits.maxIncomingMessageBytes - before
        let partialRoom = limits.maxPartialIncomingBytes - partialBytes
        let room = max(0, min(messageRoom, partialRoom))
        let tooBig =
            messageRoom <= partialRoom
            ? BlipError.tooBig("A message longer than \(limits.maxIncomingMessageBytes) bytes.")
            : BlipError.tooBig("Partly received messages over \(limits.maxPartialIncomingBytes) bytes.")
        if flags.has(BlipFlags.compressed) {
            // A compressed frame with no data (only its checksum) has nothing to inflate: feeding the inflater
            // the restored `00 00 FF FF` alone would start a stored block it cannot finish.
            if !content.isEmpty { try inflater().inflate(content, into: &message.data, limit: room, tooBig: tooBig) }
        } else {
            guard content.count <= room else { throw tooBig }
            message.data += content
        }
        inChecksum.add(message.data[before...])
        guard inChecksum.value == trailer else { throw .corrupt("BLIP frame checksum mismatch.") }
        let isPartial = flags.has(BlipFlags.moreComing)
        if message.propertiesStart == nil { try readPropertiesLength(message) }
        if isPartial {
            partialBytes += message.data.count - before
            return nil
        }
        // The last frame: the message leaves the partial maps.
        partialBytes -= before
        if message.type == .request {
            partialRequests[message.number] = nil
        } else {
            partialReplies[message.number] = nil
        }
        guard let start = message.propertiesStart, message.data.count - start >= message.propertiesLength else {
            throw .protocolViolation("A BLIP message ends before its properties.")
        }
        let end = start + message.propertiesLength
        let properties = try BlipProperties.decode(message.data[start..<end])
        let complete = BlipMessage(
            type: message.type, number: message.number, properties: properties, body: Array(message.data[end...]),
            isUrgent: message.flags.has(BlipFlags.urgent), isCompressed: message.flags.has(BlipFlags.compressed),
            isNoReply: message.flags.has(BlipFlags.noReply))
        message.data = []
        switch message.type {
        case .request where !complete.isNoReply: unanswered[message.number] = complete.isUrgent
        case .response, .error: awaitingReply.remove(message.number)
        default: break
        }
        return complete
    }

    private func readPropertiesLength(_ message: Incoming) throws(BlipError) {
        switch BlipVarint.read(message.data) {
        case .value(let length, let count):
            guard length <= UInt64(BlipLimits.maxPropertiesBytes) else {
                throw .tooBig("Message properties longer than \(BlipLimits.maxPropertiesBytes) bytes.")
            }
            message.propertiesStart = count
            message.propertiesLength = Int(length)
        case .truncated: return
        case .overflow: throw .protocolViolation("Bad properties length.")
        }
    }

    private func receivedAck(number: UInt64, ofReply: Bool, payload: ArraySlice<UInt8>) {
        let matches: (Outgoing) -> Bool = { !$0.isAck && $0.number == number && $0.isRequest != ofReply }
        guard case .value(let count, _) = BlipVarint.read(payload) else { return }
        if let message = outbox.first(where: matches) {
            message.acknowledge(count)
        } else if let index = icebox.firstIndex(where: matches) {
            let message = icebox[index]
            message.acknowledge(count)
            if message.unacked < BlipLimits.maxUnackedBytes {
                icebox.remove(at: index)
                enqueue(message)
            }
        }
        // An ACK of a message no longer queued (or unknown) is ignored, as LiteCore does.
    }
}

/// An outgoing message being framed.
private final class Outgoing {
    let number: UInt64
    /// Type and flag bits, without `moreComing`.
    let flags: UInt8
    var data: [UInt8]
    var offset = 0
    /// Frame payload bytes sent (after the header, checksum included), as the peer's ACKs count them.
    var bytesSent: UInt64 = 0
    var unacked = 0

    init(number: UInt64, flags: UInt8, data: [UInt8]) {
        self.number = number
        self.flags = flags
        self.data = data
    }

    var remaining: Int { data.count - offset }
    var isUrgent: Bool { flags & BlipFlags.urgent != 0 }
    var isAck: Bool { flags & 0x04 != 0 }
    var isRequest: Bool { flags & 0x07 == BlipMessageType.request.rawValue }
    var hasStarted: Bool { bytesSent > 0 }

    /// The peer has received `count` bytes of this message; a count above what we sent is ignored.
    func acknowledge(_ count: UInt64) {
        guard count <= bytesSent else { return }
        unacked = min(unacked, Int(clamping: bytesSent - count))
    }
}

/// An incoming message being received.
private final class Incoming {
    let number: UInt64
    /// The first frame's flags.
    let flags: BlipFlags
    let type: BlipMessageType
    /// The decoded message data so far: properties length, properties, body.
    var data: [UInt8] = []
    var propertiesStart: Int?
    var propertiesLength = 0
    /// Frame payload bytes received (as sent, compressed, checksums included), and since our last ACK.
    var rawBytes: UInt64 = 0
    var unacked = 0

    init(number: UInt64, flags: BlipFlags) {
        self.number = number
        self.flags = flags
        type = flags.type ?? .request
    }
}
