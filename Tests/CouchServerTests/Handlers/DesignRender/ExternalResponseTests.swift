import CouchWire
import Testing

@testable import CouchServer

/// A design function's response object is checked before any of it is sent: CouchDB's forms, and nothing that
/// could split the response, plant a cookie or lift the sandbox.
@Suite struct ExternalResponseTests {
    private func response(_ json: String) throws -> ExternalResponse {
        guard case .object(let object) = try JSON.parse(json) else { throw CouchError.notAnObject }
        var response = ExternalResponse()
        try response.apply(object)
        return response
    }

    private func refused(_ json: String) -> Bool {
        do {
            _ = try response(json)
            return false
        } catch let error as CouchError {
            return error.error == "external_response_error" && error.status == 500
        } catch {
            return false
        }
    }

    @Test func couchDBsFormsAndTheirContentTypes() throws {
        let body = try response(#"{"body":"hi","code":201}"#)
        #expect((body.status, body.body, body.contentType) == (201, Array("hi".utf8), "text/html; charset=utf-8"))
        let binary = try response(#"{"base64":"aGVsbG8="}"#)
        #expect((binary.body, binary.contentType) == (Array("hello".utf8), "application/binary"))
        let json = try response(#"{"json":{"a":[1]}}"#)
        #expect(json.json == (try JSON.parse(#"{"a":[1]}"#)) && json.contentType == "application/json")
        #expect(try response("{}").contentType == "application/json")
        // A later `code` wins, as CouchDB folds the members in order.
        #expect(try response(#"{"code":201,"body":"x","code":202}"#).status == 202)
    }

    @Test func theFunctionsContentTypeWinsAndTheSandboxStays() throws {
        let headers = try response(#"{"body":"x","headers":{"content-type":"text/plain","X-N":5}}"#).httpHeaders
        #expect(headers["Content-Type"] == "text/plain")
        #expect(headers["X-N"] == "5")
        #expect(headers["Content-Security-Policy"] == "sandbox")
        #expect(headers["X-Content-Type-Options"] == "nosniff")
    }

    @Test func headerInjectionWithCRLFIsRefused() {
        #expect(refused(#"{"body":"x","headers":{"X-Evil":"a\r\nSet-Cookie: AuthSession=x"}}"#))
        #expect(refused(#"{"body":"x","headers":{"X-Evil":"a\nb"}}"#))
        #expect(refused(#"{"body":"x","headers":{"X-Evil":"a\u0000b"}}"#))
        #expect(refused(#"{"body":"x","headers":{"X-Evil\r\nSet-Cookie: a":"b"}}"#))
        #expect(refused(#"{"body":"x","headers":{"":"b"}}"#))
        #expect(refused(#"{"body":"x","headers":{"X A":"b"}}"#))
        #expect(refused(#"{"body":"x","headers":{"X-Obj":{"a":1}}}"#))
        #expect(!refused(#"{"body":"x","headers":{"X-Tab":"a\tb"}}"#))
    }

    @Test func cookiesCORSFramingAndSandboxHeadersAreDropped() throws {
        let headers = try response(
            #"{"body":"x","headers":{"Set-Cookie":"AuthSession=planted","Access-Control-Allow-Origin":"*","#
                + #""Content-Length":"0","Transfer-Encoding":"chunked","Content-Security-Policy":"default-src *","#
                + #""X-Content-Type-Options":"sniff","X-Kept":"yes"}}"#
        ).httpHeaders
        #expect(headers["Set-Cookie"] == nil && headers["Access-Control-Allow-Origin"] == nil)
        #expect(headers["Content-Length"] == nil && headers["Transfer-Encoding"] == nil)
        #expect(headers.values("Content-Security-Policy") == ["sandbox"])
        #expect(headers["X-Content-Type-Options"] == "nosniff")
        #expect(headers["X-Kept"] == "yes")
    }

    @Test func malformedMembersAreCouchDBsExternalResponseError() {
        #expect(refused(#"{"foo":1}"#))
        #expect(refused(#"{"code":"abc"}"#))
        #expect(refused(#"{"code":99}"#))
        #expect(refused(#"{"code":600}"#))
        #expect(refused(#"{"code":1e400}"#))
        #expect(refused(#"{"body":7}"#))
        #expect(refused(#"{"base64":"!!not base64!!"}"#))
        #expect(refused(#"{"headers":"X-A: b"}"#))
    }

    @Test func aListStartsWithTheViewsHeadWithoutItsRows() throws {
        #expect(
            try ListRowSink.listHead(Array("{\"total_rows\":3,\"offset\":1,\"rows\":[\r\n".utf8))
                == (try JSON.parse(#"{"total_rows":3,"offset":1}"#)))
        #expect(try ListRowSink.listHead(Array("{\"rows\":[\r\n".utf8)) == (try JSON.parse("{}")))
        #expect(
            try ListRowSink.listHead(Array("{\"update_seq\":\"5-a\",\"rows\":[\r\n".utf8))
                == (try JSON.parse(#"{"update_seq":"5-a"}"#)))
        #expect(throws: (any Error).self) { try ListRowSink.listHead([]) }
    }
}
