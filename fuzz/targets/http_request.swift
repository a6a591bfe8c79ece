import CouchWire

/// Target: the HTTP/1.1 request parser, with bodies framed as the engine frames them (Content-Length skipped,
/// chunked bodies through `HTTPChunkedDecoder`), over a stream of pipelined requests.
///
/// Property: the stream parses to the same requests (heads, framing, decoded bodies) and the same error whether
/// it arrives whole, one byte at a time, or in an arbitrary split; every head satisfies the grammar the parser
/// promises (token method and names, no control characters in values, a path that is `/…`, `*` or absolute).
func fuzzOne(_ bytes: [UInt8]) {
    var outcomes: [Outcome] = []
    for pattern in feedingPatterns(bytes) {
        var session = RequestStream()
        for range in pattern where !session.stopped {
            bytes[range].withUnsafeBytes { session.feed($0) }
        }
        outcomes.append(Outcome(events: session.transcript, partial: session.partial))
    }
    require(
        outcomes.allSatisfy { $0 == outcomes[0] },
        "feeding patterns disagree:\n\(outcomes.map { "\($0)" }.joined(separator: "\n---\n"))")
}

/// What one feeding pattern produced, compared structurally (text is only made for a failure report: building
/// it for every input cost more than the parsing under test).
struct Outcome: Equatable {
    var events: [Event]
    var partial: String
}

enum Event: Equatable {
    case head(Head, HTTPBodyFraming)
    case body(bytes: Int)
    case chunkedBody([UInt8])
    case error(HTTPParseError)
    case chunkedError(HTTPParseError)
}

/// The parts of a parsed head the feeding patterns must agree on.
struct Head: Equatable {
    var method, target, path: String
    var query: String?
    var version: HTTPVersion
    var keepAlive: Bool
    var fields: [String]

    init(_ head: HTTPRequestHead) {
        (method, target, path, query) = (head.method, head.target, head.path, head.query)
        (version, keepAlive) = (head.version, head.keepAlive)
        fields = head.headers.map { "\($0.name)=\($0.value)" }
    }
}

/// Consumes a connection's bytes: heads, then their bodies, request after request, like the engine.
struct RequestStream {
    private enum Body {
        /// Held only between `feed` steps: while a step runs the state is taken out of the enum, so the parser's
        /// buffers stay uniquely referenced and are not copied on every byte (which made byte-at-a-time feeding
        /// quadratic in the harness, not in the parser).
        case taken
        case head(HTTPRequestParser)
        case length(remaining: Int, total: Int, parser: HTTPRequestParser)
        case chunked(HTTPChunkedDecoder, data: [UInt8])
    }

    private var state = Body.head(HTTPRequestParser())
    private(set) var transcript: [Event] = []
    private(set) var stopped = false

    /// What is left over when the input ends.
    var partial: String {
        if stopped { return "stopped" }
        return switch state {
        case .taken: "taken"
        case .head(let parser): parser.hasPartialRequest ? "head" : "none"
        case .length(let remaining, _, _): "body \(remaining)"
        case .chunked(_, let data): "chunked \(data.count)"
        }
    }

    mutating func feed(_ input: UnsafeRawBufferPointer) {
        var rest = input
        while !rest.isEmpty && !stopped {
            let current = state
            state = .taken
            switch consume current {
            case .taken:
                fail("state left taken")
            case .head(var parser):
                do {
                    let step = try parser.parse(rest)
                    switch step {
                    case .needMoreData:
                        state = .head(parser)
                        rest = UnsafeRawBufferPointer(rebasing: rest[rest.count...])
                    case .head(let head, let framing, let consumed):
                        require(consumed > 0 && consumed <= rest.count, "consumed \(consumed) of \(rest.count)")
                        check(head)
                        transcript.append(.head(Head(head), framing))
                        rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
                        switch framing {
                        case .none: state = .head(parser)
                        case .length(let n):
                            require(n >= 0, "negative length")
                            state = n == 0 ? .head(parser) : .length(remaining: n, total: n, parser: parser)
                        case .chunked: state = .chunked(HTTPChunkedDecoder(), data: [])
                        }
                    }
                } catch {
                    transcript.append(.error(error))
                    stopped = true
                }
            case .length(let remaining, let total, let parser):
                let take = min(remaining, rest.count)
                rest = UnsafeRawBufferPointer(rebasing: rest[take...])
                if take == remaining {
                    transcript.append(.body(bytes: total))
                    state = .head(parser)
                } else {
                    state = .length(remaining: remaining - take, total: total, parser: parser)
                }
            case .chunked(var decoder, var data):
                do {
                    switch try decoder.decode(rest) {
                    case .needMoreData:
                        rest = UnsafeRawBufferPointer(rebasing: rest[rest.count...])
                        state = .chunked(decoder, data: data)
                    case .data(let range):
                        require(
                            !range.isEmpty && range.upperBound <= rest.count, "chunk range \(range) of \(rest.count)")
                        data.append(contentsOf: rest[range])
                        rest = UnsafeRawBufferPointer(rebasing: rest[range.upperBound...])
                        state = .chunked(decoder, data: data)
                    case .end(let consumed):
                        require(
                            consumed <= rest.count && decoder.isFinished, "end consumed \(consumed) of \(rest.count)")
                        rest = UnsafeRawBufferPointer(rebasing: rest[consumed...])
                        transcript.append(.chunkedBody(data))
                        state = .head(HTTPRequestParser())
                    }
                } catch {
                    transcript.append(.chunkedError(error))
                    stopped = true
                }
            }
        }
    }

    private func check(_ head: HTTPRequestHead) {
        let tokenBytes = Array("!#$%&'*+-.^_`|~".utf8)
        func isToken(_ text: String) -> Bool {
            !text.isEmpty
                && text.utf8.allSatisfy {
                    ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || tokenBytes.contains($0)
                }
        }
        require(isToken(head.method), "method \(head.method)")
        require(head.version.major == 1 && (0...9).contains(head.version.minor), "version \(head.version)")
        require(head.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "target \(head.target)")
        require(head.path.hasPrefix("/") || head.path == "*", "path \(head.path)")
        for field in head.headers {
            require(isToken(field.name), "header name \(field.name)")
            require(field.value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, "value \(field.value)")
            require(field.value.first != " " && field.value.last != " ", "value not trimmed: \(field.value)")
        }
        require(head.headers.values("Host").count <= 1, "two Host headers")
    }
}
