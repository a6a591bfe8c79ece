/// A pure, incremental parser of WebSocket frames ([RFC 6455 §5](https://www.rfc-editor.org/rfc/rfc6455#section-5)),
/// free of I/O, that joins fragmented messages and checks every rule as bytes arrive.
///
/// Feed it whatever bytes arrived, one at a time or many frames at once: it keeps a partial header or payload between
/// calls and returns one event per complete control frame or data message. As a server it refuses unmasked frames;
/// it refuses reserved bits (no extension is ever negotiated) and reserved opcodes, control frames that are
/// fragmented or longer than 125 bytes, continuations without a message and data frames inside one, lengths that are
/// not minimally encoded or overflow 63 bits, close frames with a one-byte or unassigned code, text that is not
/// UTF-8, and frames or messages over `WebSocketLimits` before reading their payload.
public struct WebSocketFrameParser: Sendable {
    /// Which side we are: a server requires masked frames (§5.1), a client refuses them.
    public enum Role: Sendable { case server, client }

    /// The outcome of one `parse` call.
    public enum Step: Sendable, Equatable {
        /// Every byte was consumed; no frame completed an event yet.
        case needMoreData
        /// An event; `consumed` bytes of the input belong to it (and the frames before it), the rest come next.
        case event(WebSocketEvent, consumed: Int)
    }

    private enum State: Sendable {
        case header
        case payload(remaining: Int)
    }

    public let role: Role
    public let limits: WebSocketLimits
    private var state = State.header
    /// The header bytes so far (2 to 14), and how many this header has in all (known after its second byte).
    private var header: [UInt8] = []
    private var headerLength = 2
    private var fin = false
    private var opcode = WebSocketOpcode.continuation
    private var mask: (UInt8, UInt8, UInt8, UInt8)?
    private var payloadOffset = 0
    /// The data message being assembled (its first frame's opcode), and the current control frame's payload.
    private var messageOpcode: WebSocketOpcode?
    private var message: [UInt8] = []
    private var control: [UInt8] = []
    private var failure: WebSocketError?

    public init(role: Role, limits: WebSocketLimits = WebSocketLimits()) {
        self.role = role
        self.limits = limits
        header.reserveCapacity(14)
    }

    /// True while a frame or a fragmented message is partly received.
    public var hasPartialFrame: Bool {
        if case .payload = state { return true }
        return !header.isEmpty || messageOpcode != nil
    }

    /// Consumes frame bytes.
    /// - Parameter bytes: Newly received bytes, possibly several frames.
    /// - Returns: `.needMoreData` after consuming all of `bytes`, or the next event and how many bytes it used.
    /// - Throws: `WebSocketError` on a broken rule; the connection must then be failed with its `closeCode`, and
    ///   the parser refuses every later call with the same error.
    public mutating func parse(_ bytes: UnsafeRawBufferPointer) throws(WebSocketError) -> Step {
        if let failure { throw failure }
        do {
            return try parseChecked(bytes)
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func parseChecked(_ bytes: UnsafeRawBufferPointer) throws(WebSocketError) -> Step {
        var index = 0
        while true {
            switch state {
            case .header:
                // A frame with no payload completes with its header, even when no input is left.
                if header.count == headerLength {
                    if let event = try headerComplete() { return .event(event, consumed: index) }
                    continue
                }
                guard index < bytes.count else { return .needMoreData }
                header.append(bytes[index])
                index += 1
                if header.count == 1 { try checkFirstByte() }
                if header.count == 2 { try checkSecondByte() }
            case .payload(let remaining):
                if remaining == 0 {
                    if let event = try frameComplete() { return .event(event, consumed: index) }
                    continue
                }
                guard index < bytes.count else { return .needMoreData }
                let take = min(remaining, bytes.count - index)
                appendPayload(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]))
                index += take
                state = .payload(remaining: remaining - take)
            }
        }
    }

    /// FIN, RSV1-3 and the opcode.
    private mutating func checkFirstByte() throws(WebSocketError) {
        let byte = header[0]
        guard byte & 0x70 == 0 else { throw .protocolViolation("Reserved bits set without a negotiated extension.") }
        guard let code = WebSocketOpcode(rawValue: byte & 0x0F) else {
            throw .protocolViolation("Reserved opcode \(byte & 0x0F).")
        }
        fin = byte & 0x80 != 0
        opcode = code
        if code.isControl {
            guard fin else { throw .protocolViolation("Fragmented control frame.") }
        } else if code == .continuation {
            guard messageOpcode != nil else { throw .protocolViolation("Continuation frame without a message.") }
        } else if messageOpcode != nil {
            throw .protocolViolation("New data frame inside a fragmented message.")
        }
    }

    /// MASK and the 7-bit length; fixes the header's length.
    private mutating func checkSecondByte() throws(WebSocketError) {
        let byte = header[1]
        let masked = byte & 0x80 != 0
        switch role {
        case .server: guard masked else { throw .protocolViolation("Unmasked frame from a client.") }
        case .client: guard !masked else { throw .protocolViolation("Masked frame from a server.") }
        }
        let short = byte & 0x7F
        if opcode.isControl && short > WebSocketLimits.maxControlPayloadBytes {
            throw .protocolViolation("Control frame longer than 125 bytes.")
        }
        headerLength = 2 + (short == 126 ? 2 : short == 127 ? 8 : 0) + (masked ? 4 : 0)
    }

    /// Decodes the length and mask, checks the limits, and starts the payload.
    private mutating func headerComplete() throws(WebSocketError) -> WebSocketEvent? {
        let short = header[1] & 0x7F
        var length: UInt64 = UInt64(short)
        var cursor = 2
        if short == 126 {
            length = UInt64(header[2]) << 8 | UInt64(header[3])
            cursor = 4
            guard length >= 126 else { throw .protocolViolation("Length not minimally encoded.") }
        } else if short == 127 {
            length = 0
            for offset in 2..<10 { length = length << 8 | UInt64(header[offset]) }
            cursor = 10
            guard length >> 63 == 0 else { throw .protocolViolation("Length over 63 bits.") }
            guard length > 0xFFFF else { throw .protocolViolation("Length not minimally encoded.") }
        }
        mask =
            header[1] & 0x80 != 0
            ? (header[cursor], header[cursor + 1], header[cursor + 2], header[cursor + 3]) : nil
        if !opcode.isControl {
            guard length <= UInt64(limits.maxFrameBytes) else {
                throw .tooBig("Frame longer than \(limits.maxFrameBytes) bytes.")
            }
            guard UInt64(message.count) + length <= UInt64(limits.maxMessageBytes) else {
                throw .tooBig("Message longer than \(limits.maxMessageBytes) bytes.")
            }
            if opcode != .continuation { messageOpcode = opcode }
        }
        header.removeAll(keepingCapacity: true)
        headerLength = 2
        payloadOffset = 0
        control.removeAll(keepingCapacity: true)
        // Bounded by the checks above: at most maxFrameBytes, or 125 for a control frame.
        state = .payload(remaining: Int(length))
        return nil
    }

    /// Unmasks payload bytes into the message or control buffer.
    private mutating func appendPayload(_ bytes: UnsafeRawBufferPointer) {
        let isControl = opcode.isControl
        let start = isControl ? control.count : message.count
        if isControl { control.append(contentsOf: bytes) } else { message.append(contentsOf: bytes) }
        defer { payloadOffset &+= bytes.count }
        guard let mask else { return }
        // The key rotated to where this piece starts in the payload, as one word: XOR 4 bytes at a time.
        let shift = (payloadOffset & 3) * 8
        let word = UInt32(mask.0) | UInt32(mask.1) << 8 | UInt32(mask.2) << 16 | UInt32(mask.3) << 24
        let key = shift == 0 ? word : (word >> UInt32(shift)) | (word << UInt32(32 - shift))
        let unmask = { (buffer: inout UnsafeMutableBufferPointer<UInt8>) in
            guard let base = buffer.baseAddress else { return }
            let raw = UnsafeMutableRawPointer(base + start)
            var i = 0
            while i + 4 <= bytes.count {
                let value = raw.loadUnaligned(fromByteOffset: i, as: UInt32.self)
                raw.storeBytes(of: value ^ key.littleEndianWord, toByteOffset: i, as: UInt32.self)
                i += 4
            }
            while i < bytes.count {
                base[start + i] ^= UInt8(truncatingIfNeeded: key >> UInt32((i & 3) * 8))
                i += 1
            }
        }
        if isControl {
            control.withUnsafeMutableBufferPointer(unmask)
        } else {
            message.withUnsafeMutableBufferPointer(unmask)
        }
    }

    /// A frame's payload is complete: a control event, a finished message, or nothing (more fragments follow).
    private mutating func frameComplete() throws(WebSocketError) -> WebSocketEvent? {
        state = .header
        switch opcode {
        case .ping: return .ping(control)
        case .pong: return .pong(control)
        case .close: return try closeEvent()
        case .text, .binary, .continuation:
            guard fin, let kind = messageOpcode else { return nil }
            messageOpcode = nil
            let bytes = message
            message = []
            if kind == .text {
                let invalid = bytes.withUnsafeBytes { UTF8Validation.firstInvalidOffset($0) }
                guard invalid == nil else { throw .invalidUTF8 }
                return .message(.text(String(decoding: bytes, as: UTF8.self)))
            }
            return .message(.binary(bytes))
        }
    }

    /// A CLOSE payload is empty, or a valid two-byte code and a UTF-8 reason (§5.5.1, §7.4).
    private func closeEvent() throws(WebSocketError) -> WebSocketEvent {
        if control.isEmpty { return .close(code: nil, reason: "") }
        guard control.count >= 2 else { throw .protocolViolation("Close frame with a one-byte payload.") }
        let code = WebSocketCloseCode(rawValue: UInt16(control[0]) << 8 | UInt16(control[1]))
        guard code.isValidOnTheWire else { throw .protocolViolation("Close code \(code) is not allowed.") }
        let reason = control[2...]
        let invalid = reason.withUnsafeBytes { UTF8Validation.firstInvalidOffset($0) }
        guard invalid == nil else { throw .invalidUTF8 }
        return .close(code: code, reason: String(decoding: reason, as: UTF8.self))
    }
}

extension UInt32 {
    /// The key word as it lies in memory: byte 0 of the key first.
    fileprivate var littleEndianWord: UInt32 { UInt32(littleEndian: self) }
}
