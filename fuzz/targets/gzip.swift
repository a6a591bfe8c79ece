import CouchWire

/// Target: the streaming gzip decoder (zlib underneath) with its output limit.
///
/// Properties: whole, byte-at-a-time and split feeding give the same output and the same error; no call ever
/// returns more than the limit in total (a zip bomb stops at the limit); and the input as data compresses to a
/// member that decodes back to it, whole or split (one of the two per execution, chosen by the input, as the
/// feeding patterns are: see `inputChoice`).
func fuzzOne(_ bytes: [UInt8]) {
    let limit = 256 * 1024
    let outcomes = feedingPatterns(bytes).map { decode(bytes, in: $0, limit: limit) }
    require(outcomes.allSatisfy { $0 == outcomes[0] }, "feeding patterns disagree: \(outcomes.map(\.summary))")
    let compressed = Gzip.compress(bytes, level: Int32(bytes.first ?? 0) % 10)
    let pattern =
        inputChoice(bytes, among: 2, salt: 1) == 0
        ? [0..<compressed.count] : splitPoints(count: compressed.count, seed: bytes)
    require(decode(compressed, in: pattern, limit: limit) == .decoded(bytes), "round trip")
}

enum Outcome: Equatable {
    case decoded([UInt8])
    case failed(GzipError, producedBefore: Int)

    var summary: String {
        switch self {
        case .decoded(let bytes): "decoded \(bytes.count) bytes"
        case .failed(let error, let produced): "\(error) after \(produced) bytes"
        }
    }
}

func decode(_ bytes: [UInt8], in pieces: [Range<Int>], limit: Int) -> Outcome {
    var output: [UInt8] = []
    do {
        let decoder = try GzipDecoder(limit: limit)
        for piece in pieces {
            output += try decoder.decode(Array(bytes[piece]))
            require(output.count <= limit, "produced \(output.count) beyond the limit \(limit)")
        }
        try decoder.finish()
        return .decoded(output)
    } catch {
        // How much came out before an error depends on the split (zlib releases output as it goes); only the
        // error and whether the output stayed within the limit are compared.
        return .failed(error, producedBefore: 0)
    }
}
