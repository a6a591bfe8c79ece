import CouchWire

/// Target: the WebSocket frame parser, server side (masked frames required), with small limits so the 1009 paths
/// are reached.
///
/// Properties: whole, byte-at-a-time and split feeding give the same events, error and partial state; every event
/// consumes at least one byte and no more than it was given; events obey the limits (messages within
/// `maxMessageBytes`, control payloads ≤ 125 bytes, close codes allowed on the wire, reasons UTF-8); and the events
/// written back as masked client frames parse to the same events.
let limits = WebSocketLimits(maxFrameBytes: 4096, maxMessageBytes: 8192)

func fuzzOne(_ bytes: [UInt8]) {
    let outcomes = feedingPatterns(bytes).map { parse(bytes, in: $0) }
    require(outcomes.allSatisfy { $0 == outcomes[0] }, "feeding patterns disagree: \(outcomes)")
    let events = outcomes[0].events
    var reframed: [UInt8] = []
    for event in events {
        switch event {
        case .message(.binary(let payload)):
            require(payload.count <= limits.maxMessageBytes, "message of \(payload.count) bytes")
            reframed += WebSocketFrameWriter.frame(.binary, payload: payload, mask: (1, 2, 3, 4))
        case .message(.text(let text)):
            require(text.utf8.count <= limits.maxMessageBytes, "text of \(text.utf8.count) bytes")
            reframed += WebSocketFrameWriter.frame(.text, payload: Array(text.utf8), mask: (5, 6, 7, 8))
        case .ping(let payload):
            require(payload.count <= 125, "ping of \(payload.count)")
            reframed += WebSocketFrameWriter.frame(.ping, payload: payload, mask: (9, 10, 11, 12))
        case .pong(let payload):
            require(payload.count <= 125, "pong of \(payload.count)")
            reframed += WebSocketFrameWriter.frame(.pong, payload: payload, mask: (0, 0, 0, 0))
        case .close(let code, let reason):
            require(code?.isValidOnTheWire ?? reason.isEmpty, "close \(String(describing: code))")
            var payload: [UInt8] = []
            if let code { payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + Array(reason.utf8) }
            require(payload.count <= 125, "close payload \(payload.count)")
            reframed += WebSocketFrameWriter.frame(.close, payload: payload, mask: (13, 14, 15, 16))
        }
    }
    let again = parse(reframed, in: reframed.isEmpty ? [] : [0..<reframed.count])
    require(again == Outcome(events: events, failure: nil, partial: false), "re-framed events: \(again)")
}

struct Outcome: Equatable {
    var events: [WebSocketEvent]
    var failure: WebSocketError?
    var partial: Bool
}

func parse(_ bytes: [UInt8], in pieces: [Range<Int>]) -> Outcome {
    var parser = WebSocketFrameParser(role: .server, limits: limits)
    var events: [WebSocketEvent] = []
    for piece in pieces {
        var rest = bytes[piece]
        while !rest.isEmpty {
            let result: Result<WebSocketFrameParser.Step, WebSocketError> = rest.withUnsafeBytes { raw in
                Result { () throws(WebSocketError) in try parser.parse(raw) }
            }
            let step: WebSocketFrameParser.Step
            switch result {
            case .success(let value): step = value
            case .failure(let error): return Outcome(events: events, failure: error, partial: false)
            }
            guard case .event(let event, let consumed) = step else { break }
            require(consumed >= 1 && consumed <= rest.count, "consumed \(consumed) of \(rest.count)")
            events.append(event)
            rest = rest.dropFirst(consumed)
        }
    }
    return Outcome(events: events, failure: nil, partial: parser.hasPartialFrame)
}
