/// Serialises WebSocket frames (RFC 6455 §5.2): the server's own, unmasked, with the shortest length encoding.
public enum WebSocketFrameWriter {
    /// One frame.
    /// - Parameters:
    ///   - opcode: Its opcode; control frames must carry at most 125 bytes (a caller's bug otherwise).
    ///   - payload: The payload, sent as is.
    ///   - fin: False for every fragment of a message but the last.
    ///   - mask: A client's masking key (4 bytes); nil for a server, which never masks (§5.1).
    /// - Returns: The frame's bytes.
    public static func frame(
        _ opcode: WebSocketOpcode, payload: some Collection<UInt8>, fin: Bool = true,
        mask: (UInt8, UInt8, UInt8, UInt8)? = nil
    ) -> [UInt8] {
        precondition(!opcode.isControl || payload.count <= WebSocketLimits.maxControlPayloadBytes)
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 14)
        out.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        let count = payload.count
        if count < 126 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(count >> 8))
            out.append(UInt8(count & 0xFF))
        } else {
            out.append(maskBit | 127)
            let length = UInt64(count)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((length >> UInt64(shift)) & 0xFF)) }
        }
        guard let mask else {
            out.append(contentsOf: payload)
            return out
        }
        let key = [mask.0, mask.1, mask.2, mask.3]
        out.append(contentsOf: key)
        for (index, byte) in payload.enumerated() { out.append(byte ^ key[index & 3]) }
        return out
    }

    /// A binary or text message as one frame.
    public static func message(_ message: WebSocketMessage) -> [UInt8] {
        switch message {
        case .binary(let bytes): frame(.binary, payload: bytes)
        case .text(let text): frame(.text, payload: Array(text.utf8))
        }
    }

    /// A CLOSE frame with a code and a reason cut to fit 125 bytes at a UTF-8 character boundary; `nil` code sends
    /// an empty CLOSE (allowed by §5.5.1).
    public static func close(code: WebSocketCloseCode?, reason: String = "") -> [UInt8] {
        guard let code else { return frame(.close, payload: [UInt8]()) }
        var payload: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var room = WebSocketLimits.maxControlPayloadBytes - 2
        for scalar in reason.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            guard bytes.count <= room else { break }
            payload += bytes
            room -= bytes.count
        }
        return frame(.close, payload: payload)
    }
}
