import CouchCrypto
import CouchWire
import Foundation
import Testing

@Suite("MultipartBoundary")
struct MultipartBoundaryTests {
    @Test func quotedBoundaryAsCouchDBSendsIt() throws {
        let parsed = try MultipartBoundary.parse(
            contentType: "multipart/related; boundary=\"c718eb9f8ce82d6e459364da1aa26ed4\"")
        #expect(parsed.mediaType == "multipart/related")
        #expect(parsed.boundary == Array("c718eb9f8ce82d6e459364da1aa26ed4".utf8))
    }

    @Test func unquotedBoundaryExtraParametersAndCase() throws {
        let parsed = try MultipartBoundary.parse(
            contentType: "Multipart/Related; type=\"application/json\";BOUNDARY=0A1B-2c3d-UUID ; charset=utf-8")
        #expect(parsed.mediaType == "multipart/related")
        #expect(parsed.boundary == Array("0A1B-2c3d-UUID".utf8))
        let mixed = try MultipartBoundary.parse(contentType: "multipart/mixed;boundary=abc")
        #expect(mixed.mediaType == "multipart/mixed" && mixed.boundary == Array("abc".utf8))
    }

    @Test func quotedBoundaryMayHoldSpacesAndSemicolonSafeCharacters() throws {
        let parsed = try MultipartBoundary.parse(contentType: "multipart/related; boundary=\"a b:c=d?\"")
        #expect(parsed.boundary == Array("a b:c=d?".utf8))
    }

    @Test func refusesMissingBoundary() {
        #expect(throws: MultipartError.missingBoundary) {
            try MultipartBoundary.parse(contentType: "multipart/related; type=application/json")
        }
    }

    @Test func refusesOverlongBoundary() throws {
        let seventy = String(repeating: "a", count: 70)
        #expect(try MultipartBoundary.parse(contentType: "multipart/related; boundary=\(seventy)").boundary.count == 70)
        #expect(throws: MultipartError.invalidBoundary) {
            try MultipartBoundary.parse(contentType: "multipart/related; boundary=\(seventy)a")
        }
    }

    @Test func refusesEmptyOrIllegalBoundary() {
        #expect(throws: MultipartError.invalidBoundary) {
            try MultipartBoundary.parse(contentType: "multipart/related; boundary=\"\"")
        }
        #expect(throws: MultipartError.invalidBoundary) {
            try MultipartBoundary.parse(contentType: "multipart/related; boundary=\"ab\r\ncd\"")
        }
        #expect(throws: MultipartError.invalidBoundary) {
            try MultipartBoundary.parse(contentType: "multipart/related; boundary=\"trailing \"")
        }
    }

    @Test func refusesOtherMediaTypes() {
        #expect(throws: MultipartError.notMultipart(mediaType: "application/json")) {
            try MultipartBoundary.parse(contentType: "application/json; boundary=x")
        }
        #expect(throws: MultipartError.notMultipart(mediaType: "multipart/")) {
            try MultipartBoundary.parse(contentType: "multipart/; boundary=x")
        }
    }

    @Test func headerValueParsingForJavaAndCBLParts() {
        let java = MultipartHeaderValue(parsing: "application/json; charset=utf-8")
        #expect(java.value == "application/json")
        #expect(java.parameter("CHARSET") == "utf-8")
        let errorPart = MultipartHeaderValue(parsing: "application/json; error=\"true\"")
        #expect(errorPart.value == "application/json" && errorPart.parameter("error") == "true")
        #expect(MultipartHeaders.filename(in: [("content-disposition", "attachment; filename=photo")]) == "photo")
        #expect(
            MultipartHeaders.filename(in: [("Content-Disposition", "attachment; filename=\"a \\\"b\\\".jpg\"")])
                == "a \"b\".jpg")
        #expect(MultipartHeaders.filename(in: [("Content-Type", "image/jpeg")]) == nil)
    }
}

@Suite("MultipartParser")
struct MultipartParserTests {
    // MARK: Real bytes

    @Test(arguments: Feeding.all)
    func replicatorPutBodies(feeding: Feeding) throws {
        for exchange in try Transcripts.multipartPuts() {
            let contentType = try #require(exchange.requestHeaders["Content-Type"])
            let (_, boundary) = try MultipartBoundary.parse(contentType: contentType)
            let parsed = try parseMultipart(
                exchange.requestBody, boundary: String(decoding: boundary, as: UTF8.self), feeding: feeding)
            #expect(parsed.ended)
            try checkDocumentParts(parsed.parts)
        }
    }

    @Test(arguments: [Feeding.whole, Feeding.byteAtATime, Feeding.random(seed: 7, maxChunk: 300)])
    func openRevsMultipartMixedReplies(feeding: Feeding) throws {
        var sawRelated = false
        var sawPlainJSON = false
        for exchange in try Transcripts.openRevsReplies() {
            let (mediaType, outer) = try MultipartBoundary.parse(
                contentType: try #require(exchange.responseHeaders["Content-Type"]))
            #expect(mediaType == "multipart/mixed")
            let parsed = try parseMultipart(
                exchange.responseBody, boundary: String(decoding: outer, as: UTF8.self), feeding: feeding)
            #expect(parsed.ended && parsed.parts.count == 1)
            for part in parsed.parts {
                let type = try #require(part.header("Content-Type"))
                if type == "application/json" {
                    sawPlainJSON = true
                    #expect(part.body.starts(with: Array("{\"_id\":".utf8)))
                } else {
                    sawRelated = true
                    let (innerType, inner) = try MultipartBoundary.parse(contentType: type)
                    #expect(innerType == "multipart/related")
                    let nested = try parseMultipart(
                        part.body, boundary: String(decoding: inner, as: UTF8.self), feeding: feeding)
                    #expect(nested.ended)
                    try checkDocumentParts(nested.parts)
                }
            }
        }
        #expect(sawRelated && sawPlainJSON)
    }

    /// JSON first, then one part per `follows` attachment whose bytes match its length and md5
    /// digest, in `_attachments` order.
    private func checkDocumentParts(_ parts: [ParsedPart]) throws {
        try #require(parts.count >= 2)
        #expect(parts[0].headers == ["Content-Type: application/json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(parts[0].body)) as? [String: Any])
        let attachments = try #require(json["_attachments"] as? [String: [String: Any]])
        let following = attachments.filter { $0.value["follows"] as? Bool == true }
        #expect(following.count == parts.count - 1)
        for part in parts.dropFirst() {
            let name = try #require(MultipartHeaders.filename(in: part.headers.map(Self.split)))
            let info = try #require(following[name])
            let expectedLength = (info["encoded_length"] as? Int) ?? (info["length"] as? Int)
            #expect(part.body.count == expectedLength)
            #expect(part.header("Content-Length") == String(part.body.count))
            let digest = "md5-" + Data(Digest.hash(.md5, part.body)).base64EncodedString()
            #expect(info["digest"] as? String == digest)
        }
    }

    private static func split(_ line: String) -> (String, String) {
        let pieces = line.split(separator: ":", maxSplits: 1).map(String.init)
        return (pieces[0], pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces) : "")
    }

    // MARK: Client variants

    private static let uuidBoundary = "6D3C4A24-9E1B-4C55-A1B0-1C0B3F1E2D4A"

    @Test(arguments: Feeding.all)
    func couchbaseLiteIOSLayout(feeding: Feeding) throws {
        // CBLMultipartWriter: leading CRLF, Content-Length first, UUID boundary, `\r\n--B--` end.
        let body = Array(
            ("\r\n--\(Self.uuidBoundary)\r\nContent-Length: 11\r\nContent-Type: application/json\r\n\r\n{\"a\":\"b\"}\r\n"
                + "\r\n--\(Self.uuidBoundary)\r\nContent-Length: 5\r\nContent-Disposition: attachment; filename=\"photo\"\r\n"
                + "Content-Type: application/octet-stream\r\n\r\nhello\r\n--\(Self.uuidBoundary)--").utf8)
        let parsed = try parseMultipart(body, boundary: Self.uuidBoundary, feeding: feeding)
        #expect(parsed.parts.count == 2)
        #expect(parsed.parts[0].headers == ["Content-Length: 11", "Content-Type: application/json"])
        #expect(parsed.parts[0].body == Array("{\"a\":\"b\"}\r\n".utf8))
        #expect(parsed.parts[1].body == Array("hello".utf8))
        #expect(parsed.parts[1].header("Content-Disposition") == "attachment; filename=\"photo\"")
    }

    @Test(arguments: Feeding.all)
    func javaOkHttpLayout(feeding: Feeding) throws {
        // OkHttp: `application/json; charset=utf-8`, unquoted filename, closing CRLF.
        let b = "f3a1c0de-0000-4000-8000-000000000001"
        let body = Array(
            ("--\(b)\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}\r\n"
                + "--\(b)\r\nContent-Disposition: attachment; filename=photo\r\nContent-Type: image/jpeg\r\n"
                + "Content-Length: 3\r\n\r\nabc\r\n--\(b)--\r\n").utf8)
        let parsed = try parseMultipart(body, boundary: b, feeding: feeding)
        #expect(parsed.parts.map(\.body) == [Array("{}".utf8), Array("abc".utf8)])
        let type = try #require(parsed.parts[0].header("Content-Type"))
        #expect(MultipartHeaderValue(parsing: type).value == "application/json")
        #expect(
            MultipartHeaders.filename(in: [("Content-Disposition", parsed.parts[1].header("Content-Disposition") ?? "")]
            ) == "photo")
    }

    @Test(arguments: Feeding.all)
    func preambleEpiloguePaddingAndHeaderlessParts(feeding: Feeding) throws {
        let body = Array(
            ("This is a preamble.\r\n--XyZ \t\r\n\r\nno headers\r\n--XyZ\r\nX-A: 1\r\n\r\n\r\n--XyZ--  \r\nepilogue --XyZ\r\n")
                .utf8)
        let parsed = try parseMultipart(body, boundary: "XyZ", feeding: feeding)
        #expect(
            parsed.parts == [
                ParsedPart(headers: [], body: Array("no headers".utf8)), ParsedPart(headers: ["X-A: 1"], body: []),
            ])
    }

    @Test func emptyBodyWithOnlyClosingBoundary() throws {
        let parsed = try parseMultipart(Array("--b--".utf8), boundary: "b")
        #expect(parsed.parts.isEmpty && parsed.ended)
    }

    // MARK: Boundary detection

    @Test(arguments: Feeding.all)
    func boundaryLikeBytesInsideDataAreData(feeding: Feeding) throws {
        // `--B` without CRLF, partial delimiters, CR runs, a different boundary.
        let payload = Array("x--B\r\n--\r\n-B\r\r\n--\r\n--C\r\n-\r\r\r\n\r\n--".utf8)
        let body = Array("--B\r\n\r\n".utf8) + payload + Array("\r\n--B--".utf8)
        let parsed = try parseMultipart(body, boundary: "B", feeding: feeding)
        #expect(parsed.parts.map(\.body) == [payload])
    }

    @Test func delimiterSplitAtEveryPositionAcrossChunks() throws {
        // "abab" overlaps itself, so a wrong KMP fallback would lose or duplicate bytes.
        let boundary = "abab"
        let first = Array("\r\n--aba\r\n-abab-\r\r\n--abaabab\r\r".utf8)
        let second = Array("end\r\n--ab".utf8)
        let body =
            Array("--abab\r\nA: b\r\n\r\n".utf8) + first + Array("\r\n--abab\r\n\r\n".utf8) + second
            + Array("\r\n--abab--".utf8)
        let expected = ParsedBody(
            parts: [ParsedPart(headers: ["A: b"], body: first), ParsedPart(headers: [], body: second)], ended: true)
        for i in 0...body.count {
            for j in i...body.count {
                var parser = MultipartParser(boundary: Array(boundary.utf8))
                var parsed = ParsedBody()
                var open = false
                for piece in [body[0..<i], body[i..<j], body[j...]] {
                    apply(try parser.parse(Array(piece)), to: &parsed, open: &open)
                }
                try parser.finish()
                #expect(parsed == expected, "split at \(i), \(j)")
            }
        }
    }

    // MARK: Borrowed part bytes

    @Test(arguments: Feeding.all)
    func borrowedEventsCarryTheSameBytesAsCopiedOnes(feeding: Feeding) throws {
        // Delimiter look-alikes make the parser hold a delimiter prefix across chunks and then lend it back.
        let payload = Array("x--B\r\n--\r\n-B\r\r\n--\r\n--C\r\n-\r\r\r\n\r\n--".utf8) + (0...255).map { UInt8($0) }
        let body =
            Array("--B\r\nContent-Type: application/json\r\n\r\n{}\r\n--B\r\n\r\n".utf8) + payload
            + Array("\r\n--B--".utf8)
        let borrowed = try parseMultipartBorrowing(body, boundary: "B", feeding: feeding)
        #expect(borrowed == (try parseMultipart(body, boundary: "B", feeding: feeding)))
        #expect(borrowed.parts.map(\.body) == [Array("{}".utf8), payload])
    }

    @Test func borrowedDelimiterSplitAtEveryPositionAcrossChunks() throws {
        let body =
            Array("--abab\r\nA: b\r\n\r\n\r\n--aba\r\n-abab-\r\r\n--abaabab\r\r\r\n--abab\r\n\r\nend\r\n--ab".utf8)
            + Array("\r\n--abab--".utf8)
        let expected = try parseMultipart(body, boundary: "abab")
        for i in 0...body.count {
            var parser = MultipartParser(boundary: Array("abab".utf8))
            var parsed = ParsedBody()
            var open = false
            for piece in [Array(body[0..<i]), Array(body[i...])] {
                try piece.withUnsafeBytes { buffer in
                    try parser.parse(borrowing: buffer) { event in
                        if case .bodyBytes(let bytes) = event {
                            apply([.bodyChunk(Array(bytes))], to: &parsed, open: &open)
                        } else if case .partBegin(let headers) = event {
                            apply([.partBegin(headers: headers)], to: &parsed, open: &open)
                        } else if case .partEnd = event {
                            apply([.partEnd], to: &parsed, open: &open)
                        } else {
                            apply([.end], to: &parsed, open: &open)
                        }
                    }
                }
            }
            try parser.finish()
            #expect(parsed == expected, "split at \(i)")
        }
    }

    private struct Refused: Error, Equatable {}

    @Test func aConsumerThatThrowsStopsDeliveryAndTheParserRefusesMoreInput() throws {
        // The consumer refuses the first part's bytes (say, a document over its size limit): nothing after that
        // reaches it, though the same input holds a second part, and later input is refused outright.
        let body = Array("--B\r\n\r\nfirst\r\n--B\r\n\r\nsecond\r\n--B--".utf8)
        var parser = MultipartParser(boundary: Array("B".utf8))
        var seen: [String] = []
        #expect(throws: Refused()) {
            try body.withUnsafeBytes { buffer in
                try parser.parse(borrowing: buffer) { event in
                    switch event {
                    case .partBegin: seen.append("begin")
                    case .bodyBytes: throw Refused()
                    case .partEnd: seen.append("end of part")
                    case .end: seen.append("end")
                    }
                }
            }
        }
        #expect(seen == ["begin"])
        #expect(throws: MultipartError.aborted) {
            try Array("more".utf8).withUnsafeBytes { buffer in try parser.parse(borrowing: buffer) { _ in } }
        }
        #expect(throws: MultipartError.aborted) { try parser.finish() }
    }
}
