import CouchWire
import Testing

@testable import CouchServer

/// A response value is written to the connection in one place (`Reply.send`): its head carries CouchDB's default
/// headers under the handler's own; a stream's head waits for its first bytes, so a stream that fails before
/// writing is answered as the error it threw, and one that fails after bytes went out is cut off, never completed.
/// The app is an in-process server's, with rows of its own added as a product's, and is read off its sink.
@Suite final class ResponseTests {
    let server: InProcessServer
    let app: App

    /// Rows that answer each shape of response.
    struct Probes: RouteCollection {
        var routes: [Route] {
            [
                Route([.GET, .HEAD], "/_probe/bytes", .anyone) { _ in
                    var headers = HTTPHeaders()
                    headers.set("X-Probe", "1")
                    return .json(.created, ["ok": true], headers: headers)
                },
                Route([.GET], "/_probe/type", .anyone) { _ in
                    var headers = HTTPHeaders()
                    headers.set("Content-Type", "text/plain")
                    return .bytes(.ok, Array("plain".utf8), headers: headers)
                },
                Route([.GET, .HEAD], "/_probe/stream", .anyone) { _ in
                    .stream(.ok) { out in
                        try out.write("[")
                        try out.write("1]")
                    }
                },
                Route([.GET], "/_probe/fails-first", .anyone) { _ in
                    .stream(.ok) { _ in throw CouchError.conflict }
                },
                Route([.GET], "/_probe/fails-later", .anyone) { _ in
                    .stream(.ok) { out in
                        try out.write("[1,")
                        try out.flush()
                        throw CouchError.conflict
                    }
                },
                Route([.GET], "/_probe/head-late", .anyone) { _ in
                    .stream(.ok) { out in
                        var headers = HTTPHeaders()
                        headers.set("Content-Type", "text/html")
                        try out.setHead(.accepted, headers: headers)
                        try out.write("<p>")
                    }
                },
                Route([.GET], "/_probe/head-too-late", .anyone) { _ in
                    .stream(.ok) { out in
                        try out.write("x")
                        try out.setHead(.accepted, headers: HTTPHeaders())
                    }
                },
                Route([.GET], "/_probe/empty-stream", .anyone) { _ in .stream(.noContent) { _ in } },
            ]
        }
    }

    init() throws {
        server = try InProcessServer(product: { _ in [Probes()] })
        app = server.app
    }

    deinit { server.shutdown() }

    private func get(_ path: String, method: String = "GET") -> MemoryResponseSink {
        var headers = HTTPHeaders()
        headers.add("Host", "127.0.0.1")
        let sink = MemoryResponseSink(isHEAD: method == "HEAD")
        app.respond(
            HTTPRequestHead(method: method, target: path, headers: headers), HTTPRequestBody(bytes: []), to: sink)
        return sink
    }

    @Test func aBodyGetsCouchDBsHeadersUnderTheHandlersOwn() {
        let r = get("/_probe/bytes")
        #expect(r.status == 201 && r.finished)
        #expect(r.headers["X-Probe"] == "1")
        #expect(r.headers["Content-Type"] == "application/json")
        #expect(r.headers["Cache-Control"] == "must-revalidate")
        #expect(String(decoding: r.body, as: UTF8.self) == "{\"ok\":true}\n")
        let typed = get("/_probe/type")
        #expect(typed.headers["Content-Type"] == "text/plain" && typed.body == Array("plain".utf8))
    }

    @Test func headSendsTheHeadAndNoBody() {
        let bytes = get("/_probe/bytes", method: "HEAD")
        #expect(bytes.status == 201 && bytes.body.isEmpty && bytes.headers["Content-Length"] == "12")
        let stream = get("/_probe/stream", method: "HEAD")
        #expect(stream.status == 200 && stream.body.isEmpty && stream.finished)
    }

    @Test func aStreamIsWrittenWholeAndFinished() {
        let r = get("/_probe/stream")
        #expect(r.status == 200 && r.finished && !r.aborted)
        #expect(r.body == Array("[1]".utf8))
        #expect(r.headers["Content-Length"] == nil)
    }

    @Test func aStreamThatWritesNothingStillSendsItsHead() {
        let r = get("/_probe/empty-stream")
        #expect(r.status == 204 && r.finished && r.body.isEmpty)
    }

    @Test func aStreamThatFailsBeforeItsFirstByteIsAnsweredAsItsError() throws {
        let r = get("/_probe/fails-first")
        #expect(r.status == 409 && r.finished && !r.aborted)
        let json = try JSON.parse(r.body)
        #expect(json["error"]?.stringValue == "conflict")
    }

    @Test func aStreamThatFailsAfterBytesWentOutIsCutOffNotCompleted() {
        let r = get("/_probe/fails-later")
        #expect(r.aborted && !r.finished)
        #expect(r.status == 200 && r.body == Array("[1,".utf8))
    }

    @Test func aStreamNamesItsHeadBeforeItsFirstBytesAndNotAfter() {
        let late = get("/_probe/head-late")
        #expect(late.status == 202 && late.headers["Content-Type"] == "text/html" && late.body == Array("<p>".utf8))
        // Once bytes are written the head is fixed: the misuse fails the stream; nothing was flushed yet, so the
        // response is taken back and answered as a server error instead of "x" under a head it did not mean.
        let tooLate = get("/_probe/head-too-late")
        #expect(tooLate.status == 500 && tooLate.finished, "\(tooLate.status)")
        #expect(String(decoding: tooLate.body, as: UTF8.self).contains("\"error\""))
    }

    /// Tens of thousands of streamed responses through one app: the stream's boxes are let go each time.
    @Test func manyStreamsInOneAppStayFlat() {
        for _ in 0..<20_000 {
            let r = get("/_probe/stream")
            guard r.status == 200, r.body.count == 3 else {
                Issue.record("a stream answered \(r.status) with \(r.body.count) bytes")
                return
            }
        }
    }
}
