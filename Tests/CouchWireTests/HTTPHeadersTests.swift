import Testing

@testable import CouchWire

@Suite struct HTTPHeadersTests {
    @Test func lookupIsCaseInsensitiveAndOrdered() {
        var headers: HTTPHeaders = ["Content-Type": "application/json", "X-A": "1"]
        headers.add("x-a", "2")
        #expect(headers["content-type"] == "application/json")
        #expect(headers.values("X-A") == ["1", "2"])
        #expect(headers.contains("CONTENT-TYPE"))
        #expect(!headers.contains("Content-Length"))
        headers.set("X-a", "3")
        #expect(headers.values("x-a") == ["3"])
        #expect(headers.map(\.name) == ["Content-Type", "X-a"])
        headers.remove("content-type")
        #expect(headers.count == 1)
    }

    @Test func tokensSplitAtCommas() {
        let headers = HTTPHeaders([("Connection", "keep-alive, Upgrade"), ("Connection", " close ")])
        #expect(headers.containsToken("CLOSE", in: "connection"))
        #expect(headers.containsToken("upgrade", in: "Connection"))
        #expect(!headers.containsToken("keep", in: "Connection"))
    }

    @Test func errorBodiesAreEscapedJSON() {
        let body = String(decoding: HTTPError.malformed("bad \"quote\" \\ and \u{1}").jsonBody, as: UTF8.self)
        #expect(body == #"{"error":"bad_request","reason":"bad \"quote\" \\ and \u0001"}"# + "\n")
        #expect(HTTPError.payloadTooLarge.status == 413)
        #expect(HTTPError(.tooManyHeaders).status == 431)
        #expect(HTTPError(.requestLineTooLong).status == 414)
    }
}
