import CouchWire

/// Target: the streaming multipart parser (and the boundary parameter of `Content-Type`).
///
/// Input: a `Content-Type` value, CRLF, then the body. Properties: whole, byte-at-a-time and split feeding give the
/// same parts (headers and concatenated bytes), the same end and the same error, through both the copying and the
/// borrowing API (the borrowing API fed whole against one other way per execution, see `inputChoice`); events come
/// in order (begin, bytes, end per part, then `.end` once); no body chunk is empty; and parts written by
/// `MultipartWriter`-style framing of the parsed result parse back the same.
func fuzzOne(_ bytes: [UInt8]) {
    let split = bytes.firstIndex(of: 0x0A).map { $0 + 1 } ?? bytes.count
    var header = bytes[..<split]
    while let last = header.last, last == 0x0A || last == 0x0D { header = header.dropLast() }
    guard let (_, boundary) = try? MultipartBoundary.parse(contentType: String(decoding: header, as: UTF8.self))
    else { return }
    let body = Array(bytes[split...])
    // The reference is the borrowing API fed whole; it is compared with one of the five other ways, chosen by the
    // input: 0 the copying API whole, 1/2 the copying API byte by byte / in the input-derived split, 3/4 the
    // borrowing API the same. Parsing every input all six ways, byte by byte twice, was nearly all of the CPU.
    let whole = body.isEmpty ? [] : [0..<body.count]
    let way = inputChoice(bytes, among: 5)
    let pieces =
        way == 0 ? whole : way % 2 == 1 ? bytewise(body.count, seed: body) : splitPoints(count: body.count, seed: body)
    let outcomes = [
        parseBorrowing(body, whole, boundary: boundary),
        way < 3 ? parseCopying(body, pieces, boundary: boundary) : parseBorrowing(body, pieces, boundary: boundary),
    ]
    // The copying API returns no events from a call that throws, so after an error only the error is compared.
    let comparable = outcomes.map { $0.error == nil ? $0 : Parsed(error: $0.error) }
    require(comparable[1] == comparable[0], "feeding patterns disagree (way \(way)): \(outcomes.map(\.summary))")
    if outcomes[0].error == nil, outcomes[0].ended {
        let rewritten = write(outcomes[0].parts, boundary: boundary)
        let again = parseCopying(rewritten, [0..<rewritten.count], boundary: boundary)
        require(again.parts == outcomes[0].parts && again.ended && again.error == nil, "rewrite differs")
    }
}

struct Part: Equatable {
    var headers: [String]
    var body: [UInt8] = []
    var closed = false
}

struct Parsed: Equatable {
    var parts: [Part] = []
    var ended = false
    var error: String?
    var summary: String { "\(parts.count) parts, ended \(ended), error \(error ?? "none")" }

    mutating func begin(_ headers: [(String, String)]) {
        require(!ended && parts.last?.closed != false, "part begins inside a part or after the end")
        parts.append(Part(headers: headers.map { "\($0.0): \($0.1)" }))
    }

    mutating func bytes(_ piece: UnsafeRawBufferPointer) {
        require(!piece.isEmpty, "empty body chunk")
        require(parts.last?.closed == false, "bytes outside a part")
        parts[parts.count - 1].body.append(contentsOf: piece)
    }

    mutating func partEnd() {
        require(parts.last?.closed == false, "part end outside a part")
        parts[parts.count - 1].closed = true
    }

    mutating func end() {
        require(!ended && parts.last?.closed != false, "end inside a part or twice")
        ended = true
    }
}

func parseCopying(_ body: [UInt8], _ pieces: [Range<Int>], boundary: [UInt8]) -> Parsed {
    var parser = MultipartParser(boundary: boundary)
    var result = Parsed()
    do {
        for piece in pieces {
            // Whole input: the `[UInt8]` overload; pieces: the raw-buffer one (no array made per byte fed).
            let events =
                piece.count == body.count
                ? try parser.parse(body) : try body[piece].withUnsafeBytes { try parser.parse($0) }
            for event in events {
                switch event {
                case .partBegin(let headers): result.begin(headers)
                case .bodyChunk(let chunk): chunk.withUnsafeBytes { result.bytes($0) }
                case .partEnd: result.partEnd()
                case .end: result.end()
                }
            }
        }
        try parser.finish()
        require(parser.isComplete == result.ended, "isComplete disagrees with .end")
    } catch {
        result.error = "\(error)"
    }
    return result
}

func parseBorrowing(_ body: [UInt8], _ pieces: [Range<Int>], boundary: [UInt8]) -> Parsed {
    var parser = MultipartParser(boundary: boundary)
    var result = Parsed()
    do {
        for piece in pieces {
            try body[piece].withUnsafeBytes { raw in
                try parser.parse(borrowing: raw) { event in
                    switch event {
                    case .partBegin(let headers): result.begin(headers)
                    case .bodyBytes(let chunk): result.bytes(chunk)
                    case .partEnd: result.partEnd()
                    case .end: result.end()
                    }
                }
            }
        }
        try parser.finish()
    } catch {
        result.error = "\(error)"
    }
    return result
}

/// Frames parts as RFC 2046 does (what `MultipartWriter` sends), with the headers as parsed.
func write(_ parts: [Part], boundary: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    for part in parts {
        out += Array("--".utf8) + boundary + [0x0D, 0x0A]
        for header in part.headers { out += Array(header.utf8) + [0x0D, 0x0A] }
        out += [0x0D, 0x0A] + part.body + [0x0D, 0x0A]
    }
    out += Array("--".utf8) + boundary + Array("--".utf8)
    return out
}
