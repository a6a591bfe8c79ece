import CouchWire

/// Target: the base64 decoder (CouchDB's lenient whitespace rule) and both encoders.
///
/// Properties: decoding never reads outside its input; a decoded value re-encodes to text that decodes to the
/// same bytes, and is at most 3/4 of the input; every input, as data, encodes (one shot and streaming in any
/// split, which must agree) to text that decodes back to it; a decode succeeds exactly when the text stripped of
/// whitespace has a length that is a multiple of four (only checked for the alphabet and `=`).
func fuzzOne(_ bytes: [UInt8]) {
    if let decoded = Base64.decode(bytes) {
        require(decoded.count <= bytes.count / 4 * 3, "decoded \(decoded.count) from \(bytes.count)")
        var encoded: [UInt8] = []
        Base64.encode(decoded, into: &encoded)
        require(Base64.decode(encoded) == decoded, "re-encoded text decodes differently")
        let stripped = bytes.filter { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        require(stripped.count % 4 == 0, "accepted a length of \(stripped.count)")
    }
    var oneShot: [UInt8] = []
    Base64.encode(bytes, into: &oneShot)
    require(oneShot.count == Base64.encodedCount(bytes.count), "encoded length")
    require(Base64.decode(oneShot) == bytes, "decode(encode(x)) != x")
    for pattern in feedingPatterns(bytes) {
        var encoder = Base64Encoder()
        var streamed: [UInt8] = []
        for range in pattern { bytes[range].withUnsafeBytes { encoder.update($0, into: &streamed) } }
        encoder.finish(into: &streamed)
        require(streamed == oneShot, "streaming encoder differs from one-shot encoder")
    }
}
