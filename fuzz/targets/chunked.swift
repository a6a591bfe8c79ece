import CouchWire

/// Target: the chunked transfer-coding decoder.
///
/// Properties: whole, byte-at-a-time and split feeding give the same data, end and error; a returned data range
/// lies inside the input and is never empty; `.end` comes only once the decoder is finished; and the decoded data
/// re-encoded as one chunk decodes back to itself.
func fuzzOne(_ bytes: [UInt8]) {
    let outcomes = feedingPatterns(bytes).map { decode(bytes, in: $0) }
    require(outcomes.allSatisfy { $0 == outcomes[0] }, "feeding patterns disagree: \(outcomes)")
    if case .finished(let data, _) = outcomes[0] {
        var encoded = Array(String(data.count, radix: 16).utf8) + [0x0D, 0x0A] + data + [0x0D, 0x0A]
        if data.isEmpty { encoded = [] }
        encoded += Array("0\r\n\r\n".utf8)
        require(decode(encoded, in: [0..<encoded.count]) == .finished(data, consumed: encoded.count), "re-encode")
    }
}

enum Outcome: Equatable {
    case finished([UInt8], consumed: Int)
    case incomplete([UInt8])
    case failed(String)
}

func decode(_ bytes: [UInt8], in pieces: [Range<Int>]) -> Outcome {
    var decoder = HTTPChunkedDecoder()
    var data: [UInt8] = []
    var consumed = 0
    for piece in pieces {
        var rest = bytes[piece]
        while !rest.isEmpty {
            let step: HTTPChunkedDecoder.Step
            do {
                step = try rest.withUnsafeBytes { raw throws(HTTPParseError) in try decoder.decode(raw) }
            } catch {
                return .failed("\(error)")
            }
            switch step {
            case .needMoreData:
                consumed += rest.count
                rest = []
            case .data(let range):
                require(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= rest.count, "range \(range)")
                let start = rest.startIndex
                data += rest[(start + range.lowerBound)..<(start + range.upperBound)]
                consumed += range.upperBound
                rest = rest[(start + range.upperBound)...]
            case .end(let used):
                require(used >= 0 && used <= rest.count && decoder.isFinished, "end \(used) of \(rest.count)")
                return .finished(data, consumed: consumed + used)
            }
        }
    }
    require(!decoder.isFinished, "finished without .end")
    return .incomplete(data)
}
