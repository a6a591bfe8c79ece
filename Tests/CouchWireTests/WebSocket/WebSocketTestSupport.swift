@testable import CouchWire

/// A client frame built by hand (RFC 6455 §5.2), independent of `WebSocketFrameWriter`: masked unless `mask` is nil.
func clientFrame(
    _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, mask: [UInt8]? = [0x37, 0xFA, 0x21, 0x3D],
    headerBits: UInt8 = 0
) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | headerBits | opcode]
    let maskBit: UInt8 = mask == nil ? 0 : 0x80
    if payload.count < 126 {
        out.append(maskBit | UInt8(payload.count))
    } else if payload.count < 65536 {
        out += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        out.append(maskBit | 127)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((payload.count >> shift) & 0xFF)) }
    }
    guard let mask else { return out + payload }
    out += mask
    for (index, byte) in payload.enumerated() { out.append(byte ^ mask[index % 4]) }
    return out
}

/// Runs a parser over `bytes`, whole or one byte at a time, collecting every event.
func parseEvents(
    _ bytes: [UInt8], role: WebSocketFrameParser.Role = .server, limits: WebSocketLimits = WebSocketLimits(),
    bytewise: Bool
) throws(WebSocketError) -> (events: [WebSocketEvent], partial: Bool) {
    var parser = WebSocketFrameParser(role: role, limits: limits)
    var events: [WebSocketEvent] = []
    let pieces: [[UInt8]] = bytewise ? bytes.map { [$0] } : [bytes]
    for piece in pieces {
        var rest = piece[...]
        while true {
            let outcome: Result<WebSocketFrameParser.Step, WebSocketError> = rest.withUnsafeBytes { raw in
                Result { () throws(WebSocketError) in try parser.parse(raw) }
            }
            let step = try outcome.get()
            guard case .event(let event, let consumed) = step else { break }
            events.append(event)
            rest = rest.dropFirst(consumed)
        }
    }
    return (events, parser.hasPartialFrame)
}

/// The error a parser throws on `bytes`, whole and one byte at a time (both must agree), or nil.
func parseError(
    _ bytes: [UInt8], role: WebSocketFrameParser.Role = .server, limits: WebSocketLimits = WebSocketLimits()
) -> WebSocketError? {
    var errors: [WebSocketError?] = []
    for bytewise in [false, true] {
        do {
            _ = try parseEvents(bytes, role: role, limits: limits, bytewise: bytewise)
            errors.append(nil)
        } catch {
            errors.append(error)
        }
    }
    return errors[0] == errors[1] ? errors[0] : .protocolViolation("whole and bytewise disagree: \(errors)")
}
