import Testing

@testable import CouchWire

/// Parses `text` both whole and one byte at a time, requiring both ways to agree.
private func parse(_ text: String) -> Result<(HTTPRequestHead, HTTPBodyFraming, Int), HTTPParseError> {
    let bytes = Array(text.utf8)
    let whole = parseOnce(bytes, byteAtATime: false)
    let perByte = parseOnce(bytes, byteAtATime: true)
    switch (whole, perByte) {
    case (.success(let a), .success(let b)):
        #expect(a.0.target == b.0.target && a.1 == b.1 && a.2 == b.2, "whole and per-byte parses differ")
    case (.failure(let a), .failure(let b)):
        #expect(a == b, "whole and per-byte errors differ")
    default:
        Issue.record("whole and per-byte outcomes differ: \(whole) vs \(perByte)")
    }
    return whole
}

private func parseOnce(
    _ bytes: [UInt8], byteAtATime: Bool
) -> Result<(HTTPRequestHead, HTTPBodyFraming, Int), HTTPParseError> {
    var parser = HTTPRequestParser()
    let pieces: [ArraySlice<UInt8>] = byteAtATime ? bytes.indices.map { bytes[$0...$0] } : [bytes[...]]
    var offset = 0
    for piece in pieces {
        do {
            let step = try piece.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw) }
            if case .head(let head, let framing, let consumed) = step {
                return .success((head, framing, offset + consumed))
            }
        } catch {
            return .failure(error as? HTTPParseError ?? .malformed("unexpected \(error)"))
        }
        offset += piece.count
    }
    return .failure(.malformed("incomplete"))
}

private func expectError(_ text: String, _ expected: HTTPParseError) {
    guard case .failure(let error) = parse(text) else {
        Issue.record("expected \(expected), got a head")
        return
    }
    #expect(error == expected)
}

private func isMalformed(_ text: String) -> Bool {
    if case .failure(.malformed(let reason)) = parse(text) { return reason != "incomplete" }
    return false
}

@Suite struct HTTPRequestParserTests {
    @Test func parsesRequestLineHeadersAndQuery() throws {
        let text = "GET /db/doc%2Fx?rev=1-a HTTP/1.1\r\nHost: localhost\r\nAccept:  application/json \r\n\r\n"
        let (head, framing, consumed) = try parse(text).get()
        #expect(head.method == "GET")
        #expect(head.target == "/db/doc%2Fx?rev=1-a")
        #expect(head.path == "/db/doc%2Fx")
        #expect(head.query == "rev=1-a")
        #expect(head.version == .http1_1)
        #expect(head.headers["accept"] == "application/json")
        #expect(head.headers["HOST"] == "localhost")
        #expect(framing == .none)
        #expect(consumed == text.utf8.count)
        #expect(head.keepAlive)
    }

    @Test func queryIsNilWithoutQuestionMarkAndEmptyWithOne() throws {
        #expect(try parse("GET /a HTTP/1.1\r\n\r\n").get().0.query == nil)
        #expect(try parse("GET /a? HTTP/1.1\r\n\r\n").get().0.query == "")
    }

    @Test func absoluteFormYieldsPath() throws {
        let head = try parse("GET http://example.com:5984/db/_changes?since=0 HTTP/1.1\r\n\r\n").get().0
        #expect(head.path == "/db/_changes")
        #expect(head.query == "since=0")
    }

    @Test func pipelinedBytesAfterHeadAreNotConsumed() throws {
        let first = "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\n"
        let (_, framing, consumed) = try parse(first + "abcGET /b HTTP/1.1\r\n\r\n").get()
        #expect(framing == .length(3))
        #expect(consumed == first.utf8.count)
    }

    @Test func leadingEmptyLinesAreIgnoredButBounded() throws {
        #expect(try parse("\r\n\r\nGET / HTTP/1.1\r\n\r\n").get().0.path == "/")
        #expect(isMalformed(String(repeating: "\r\n", count: 10) + "GET / HTTP/1.1\r\n\r\n"))
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() throws {
        #expect(try !parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").get().0.keepAlive)
        #expect(try !parse("GET / HTTP/1.0\r\n\r\n").get().0.keepAlive)
        #expect(try parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").get().0.keepAlive)
        #expect(try parse("GET / HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\n\r\n").get().0.keepAlive)
    }

    @Test func bareLineFeedIsRejected() {
        #expect(isMalformed("GET / HTTP/1.1\nHost: x\r\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.1\r\nHost: x\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.1\r\nHost: x\r\n\n"))
    }

    @Test func bareCarriageReturnInsideALineIsRejected() {
        #expect(isMalformed("GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n"))
    }

    @Test func obsoleteLineFoldingIsRejected() {
        #expect(isMalformed("GET / HTTP/1.1\r\nX-A: a\r\n  continued\r\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.1\r\nX-A: a\r\n\tcontinued\r\n\r\n"))
    }

    @Test func whitespaceBeforeColonIsRejected() {
        #expect(isMalformed("GET / HTTP/1.1\r\nContent-Length : 5\r\n\r\nhello"))
        #expect(isMalformed("GET / HTTP/1.1\r\nHost\t: x\r\n\r\n"))
    }

    @Test func malformedRequestLinesAreRejected() {
        #expect(isMalformed("GET  / HTTP/1.1\r\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.1 \r\n\r\n"))
        #expect(isMalformed("GET /\r\n\r\n"))
        #expect(isMalformed("G(T / HTTP/1.1\r\n\r\n"))
        #expect(isMalformed("GET relative HTTP/1.1\r\n\r\n"))
        #expect(isMalformed("GET / HTTX/1.1\r\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.10\r\n\r\n"))
        #expect(isMalformed("GET /\u{7F} HTTP/1.1\r\n\r\n"))
    }

    @Test func unsupportedMajorVersionIs505() {
        expectError("GET / HTTP/2.0\r\n\r\n", .unsupportedVersion)
        expectError("GET / HTTP/0.9\r\n\r\n", .unsupportedVersion)
    }

    @Test func controlCharactersInHeaderValuesAreRejected() {
        #expect(isMalformed("GET / HTTP/1.1\r\nX-A: a\u{0}b\r\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.1\r\nX-A: a\u{1B}b\r\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.1\r\n: empty-name\r\n\r\n"))
        #expect(isMalformed("GET / HTTP/1.1\r\nno-colon\r\n\r\n"))
    }

    @Test func duplicateHostIsRejected() {
        #expect(isMalformed("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"))
    }

    // MARK: Framing and request smuggling

    @Test func requestSmugglingContentLengthWithTransferEncodingIsRejected() {
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n"))
    }

    @Test func requestSmugglingDuplicateConflictingContentLengthIsRejected() throws {
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: 4, 5\r\n\r\n"))
        #expect(try parse("POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n").get().1 == .length(4))
        #expect(try parse("POST / HTTP/1.1\r\nContent-Length: 4, 4\r\n\r\n").get().1 == .length(4))
    }

    @Test func requestSmugglingInvalidContentLengthIsRejected() {
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: +4\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: \r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nContent-Length: 4,\r\n\r\n"))
    }

    @Test func absurdContentLengthIs413() {
        expectError("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", .contentLengthTooLarge)
    }

    @Test func requestSmugglingTransferEncodingOtherThanChunkedIsRejected() throws {
        #expect(isMalformed("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, identity\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n"))
        #expect(isMalformed("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"))
        #expect(try parse("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").get().1 == .chunked)
    }

    // MARK: Limits

    @Test func oversizedRequestLineIs414EvenBeforeItEnds() {
        let longTarget = "/" + String(repeating: "a", count: HTTPLimits.maxRequestLineBytes)
        expectError("GET \(longTarget) HTTP/1.1\r\n\r\n", .requestLineTooLong)
        // Without any line end: refused as soon as the limit is passed, not buffered forever.
        expectError("GET \(longTarget)", .requestLineTooLong)
    }

    @Test func requestLineExactlyAtLimitIsAccepted() throws {
        let padding = HTTPLimits.maxRequestLineBytes - "GET / HTTP/1.1".utf8.count
        let target = "/" + String(repeating: "a", count: padding)
        #expect(try parse("GET \(target) HTTP/1.1\r\n\r\n").get().0.target == target)
    }

    @Test func oversizedHeadersAre431() {
        let big = String(repeating: "b", count: HTTPLimits.maxHeaderBlockBytes)
        expectError("GET / HTTP/1.1\r\nX-Big: \(big)\r\n\r\n", .headerBlockTooLarge)
        expectError("GET / HTTP/1.1\r\nX-Big: \(big)", .headerBlockTooLarge)
        let many = (0..<60).map { "X-\($0): " + String(repeating: "c", count: 1500) + "\r\n" }.joined()
        expectError("GET / HTTP/1.1\r\n\(many)\r\n", .headerBlockTooLarge)
    }

    @Test func tooManyHeadersAre431() throws {
        let fields = { (count: Int) in (0..<count).map { "X-\($0): v\r\n" }.joined() }
        expectError("GET / HTTP/1.1\r\n\(fields(HTTPLimits.maxHeaderCount + 1))\r\n", .tooManyHeaders)
        #expect(try parse("GET / HTTP/1.1\r\n\(fields(HTTPLimits.maxHeaderCount))\r\n").get().0.headers.count == 100)
    }

    @Test func parserIsReusableForTheNextRequest() throws {
        var parser = HTTPRequestParser()
        let bytes = Array("GET /one HTTP/1.1\r\n\r\nGET /two HTTP/1.1\r\n\r\n".utf8)
        var paths: [String] = []
        var offset = 0
        while offset < bytes.count {
            let step = try bytes[offset...].withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw) }
            guard case .head(let head, _, let consumed) = step else { break }
            paths.append(head.path)
            offset += consumed
        }
        #expect(paths == ["/one", "/two"])
        #expect(!parser.hasPartialRequest)
    }
}
