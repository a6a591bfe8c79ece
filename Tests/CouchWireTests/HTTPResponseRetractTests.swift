import Testing

@testable import CouchWire

/// A streamed response that fails part-way: taken back and answered as an error while nothing of it was sent,
/// cut off (never completed) once bytes are out, so a client can never mistake a short stream for a whole one.
@Suite struct HTTPResponseRetractTests {
    @Test func aStreamFailingBeforeAnyByteIsSentBecomesItsErrorAndTheConnectionLives() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /fails-before-sending HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 404 && response.bodyText == "gone")
            #expect(response.header("Transfer-Encoding") == nil && response.header("Connection") == nil)
            // Kept alive: the same connection serves the next request.
            try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().bodyText == "hello")
        }
    }

    @Test func aStreamFailingAfterBytesWentOutIsCutOffNotCompleted() throws {
        try withHTTPTestServer { port, _, _ in
            let client = try RawHTTPClient(port: port)
            try client.send("GET /fails-after-sending HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try client.readHead()
            #expect(head.status == 200 && head.header("Transfer-Encoding") == "chunked")
            // The first chunk, then the connection ends without the last chunk ("0\r\n\r\n").
            let rest = String(decoding: try client.readUntilClosed(), as: UTF8.self)
            #expect(rest.contains("{\"rows\":["))
            #expect(!rest.hasSuffix("0\r\n\r\n"))
        }
    }
}
