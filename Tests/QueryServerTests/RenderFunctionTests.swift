import CouchWire
import Foundation
import QueryServer
import Testing

/// `show`, `update` and `list` over real worker processes: CouchDB's response forms and errors, content negotiation,
/// and the list conversation (rows pushed one at a time, output flushed as it grows, a function cut off by time).
@Suite("Show, list and update functions", .serialized)
struct RenderFunctionTests {
    static let design = #"""
        {"_id":"_design/r",
         "shows":{
           "hello":"function(doc, req) { return 'Hello ' + (doc ? doc.name : req.query.who); }",
           "obj":"function(doc, req) { return {body: 'b', code: 201, headers: {'X-A': '1'}}; }",
           "prov":"function(doc, req) { provides('json', function() { return toJSON({j: 1}); }); provides('html', function() { return '<p>'; }); }",
           "this":"function(doc, req) { return this._id; }",
           "title":"function(doc, req) { return doc.title; }",
           "row":"function(doc, req) { return getRow(); }",
           "arr":"function() { throw ['error', 'mine', 'why']; }"
         },
         "updates":{
           "inc":"function(doc, req) { doc.n = (doc.n || 0) + 1; return [doc, toJSON(doc.n)]; }",
           "none":"function(doc, req) { return [null, {json: {m: req.method}}]; }",
           "bad":"function(doc, req) { return 7; }"
         },
         "lists":{
           "ids":"function(head, req) { start({headers: {'X-L': head.total_rows}}); var r; while (r = getRow()) { send(r.id + ','); } return 'end'; }",
           "one":"function(head, req) { var r = getRow(); return 'only ' + r.id; }",
           "none":"function(head, req) { return 'no rows read'; }",
           "flood":"function(head, req) { getRow(); var s = 'x'; for (var i = 0; i < 16; i++) { s += s; } for (var j = 0; j < 64; j++) { send(s); } return ''; }",
           "forever":"function(head, req) { getRow(); var s = 'xxxxxxxxxxxxxxxx'; while (true) { send(s); } }",
           "spin":"function(head, req) { while (true) {} }",
           "throws":"function(head, req) { getRow(); throw new Error('late'); }"
         }}
        """#

    private func request(
        _ json: String = #"{"method":"GET","path":["db","_design","r","_show","x"],"query":{},"headers":{}}"#
    )
        throws -> JSON
    {
        try JSON.parse(json)
    }

    @Test func showReturnsCouchDBsResponseForms() throws {
        let server = makeServer(workers: 1)
        let design = try ddoc(Self.design)
        let hello = try server.show(
            design, name: "hello", doc: .null, request: try request(#"{"query":{"who":"you"},"headers":{}}"#))
        #expect(hello.object["body"] == "Hello you")
        let obj = try server.show(design, name: "obj", doc: .null, request: try request())
        #expect(obj.object["code"]?.intValue == 201)
        #expect(obj.object["headers"]?.objectValue?["X-A"] == "1")
        #expect(try server.show(design, name: "this", doc: .null, request: try request()).object["body"] == "_design/r")
    }

    @Test func showNegotiatesProvidesOnAcceptAndFormat() throws {
        let server = makeServer(workers: 1)
        let design = try ddoc(Self.design)
        let html = try server.show(
            design, name: "prov", doc: .null, request: try request(#"{"query":{},"headers":{"Accept":"text/html"}}"#))
        #expect(html.object["body"] == "<p>")
        #expect(html.object["headers"]?.objectValue?["Content-Type"] == "text/html; charset=utf-8")
        let json = try server.show(
            design, name: "prov", doc: .null, request: try request(#"{"query":{"format":"json"},"headers":{}}"#))
        #expect(json.object["body"] == #"{"j":1}"#)
        #expect(
            throws: QueryServerError.function(
                error: "not_acceptable",
                reason:
                    "Content-Type image/png not supported, try one of: text/html; charset=utf-8, application/json, text/x-json"
            )
        ) {
            try server.show(
                design, name: "prov", doc: .null,
                request: try request(#"{"query":{},"headers":{"accept":"image/png"}}"#))
        }
    }

    @Test func showErrorsAreCouchDBs() throws {
        let server = makeServer(workers: 1)
        let design = try ddoc(Self.design)
        let missingDoc = try request(#"{"path":["db","_design","r","_show","title","gone"],"headers":{}}"#)
        #expect(throws: QueryServerError.function(error: "not_found", reason: "document not found")) {
            try server.show(design, name: "title", doc: .null, request: missingDoc)
        }
        #expect(throws: QueryServerError.function(error: "mine", reason: "why")) {
            try server.show(design, name: "arr", doc: .null, request: try request())
        }
        // `getRow` belongs to lists: a show calling it fails, and the worker stays usable.
        let plain = try request()
        do {
            _ = try server.show(design, name: "row", doc: .null, request: plain)
            Issue.record("getRow() in a show did not fail")
        } catch {
            #expect(error.error == "render_error")
        }
        #expect(throws: QueryServerError.compilation("Expression does not eval to a function. (undefined)")) {
            try server.show(design, name: "nope", doc: .null, request: try request())
        }
        #expect(try server.show(design, name: "this", doc: .null, request: try request()).object["body"] == "_design/r")
        #expect(server.workersStarted == 1)
    }

    @Test func updateReturnsTheDocumentAndTheResponse() throws {
        let server = makeServer(workers: 1)
        let design = try ddoc(Self.design)
        let post = try request(#"{"method":"POST","headers":{}}"#)
        let inc = try server.update(design, name: "inc", doc: try JSON.parse(#"{"_id":"a","n":1}"#), request: post)
        #expect(inc.document == (try JSON.parse(#"{"_id":"a","n":2}"#)))
        #expect(inc.response.object["body"] == "2")
        let none = try server.update(design, name: "none", doc: .null, request: post)
        #expect(none.document == nil)
        #expect(none.response.object["json"] == (try JSON.parse(#"{"m":"POST"}"#)))
        #expect(
            throws: QueryServerError.function(error: "method_not_allowed", reason: "Update functions do not allow GET")
        ) {
            try server.update(design, name: "none", doc: .null, request: try request())
        }
        #expect(
            throws: QueryServerError.function(error: "render_error", reason: "undefined response from update function")
        ) {
            try server.update(design, name: "bad", doc: .null, request: post)
        }
    }

    /// Collects a list's output.
    final class Collected: @unchecked Sendable {
        var starts: [JSONObject] = []
        var text = ""
        var pieces = 0
    }

    private func list(
        _ server: QueryServer, _ name: String, rows: Int, collected: Collected
    ) throws -> ListSession {
        try server.list(
            try ddoc(Self.design), name: name, head: try JSON.parse(#"{"total_rows":\#(rows),"offset":0}"#),
            request: try request()
        ) { output in
            if let start = output.start { collected.starts.append(start) }
            collected.text += output.chunks.joined()
            collected.pieces += 1
        }
    }

    private static func row(_ id: Int) -> [UInt8] { Array(#"{"id":"d\#(id)","key":\#(id),"value":null}"#.utf8) }

    @Test func listPullsRowsOneAtATime() throws {
        let server = makeServer(workers: 1)
        let collected = Collected()
        let session = try list(server, "ids", rows: 3, collected: collected)
        #expect(collected.starts.first?["headers"]?.objectValue?["X-L"] == .int(3))
        for id in 1...3 { #expect(try session.row(Self.row(id))) }
        try session.finish()
        #expect(collected.text == "d1,d2,d3,end")
        // The worker went back to the pool, and serves the next call.
        #expect(
            try server.show(try ddoc(Self.design), name: "this", doc: .null, request: try request()).object["body"]
                == "_design/r")
        #expect(server.workersStarted == 1)
    }

    @Test func aListThatStopsReadingEndsItsRows() throws {
        let server = makeServer(workers: 1)
        let collected = Collected()
        let session = try list(server, "one", rows: 3, collected: collected)
        #expect(try session.row(Self.row(1)) == false)
        #expect(try session.row(Self.row(2)) == false)
        try session.finish()
        #expect(collected.text == "only d1")
        let none = Collected()
        let empty = try list(server, "none", rows: 0, collected: none)
        try empty.finish()
        #expect(none.text == "no rows read")
        #expect(server.workersStarted == 1)
    }

    @Test func aListsOutputIsFlushedAsItGrows() throws {
        let server = makeServer(workers: 1)
        let collected = Collected()
        let session = try list(server, "flood", rows: 1, collected: collected)
        try session.row(Self.row(1))
        try session.finish()
        #expect(collected.text.utf8.count == 64 * 65536)
        #expect(collected.pieces > 32)  // flushed in pieces, never held whole
    }

    @Test func aListThatSendsForeverIsCutOffByTheTimeout() throws {
        let server = makeServer(timeout: .milliseconds(700), workers: 1)
        let collected = Collected()
        let started = ContinuousClock.now
        let session = try list(server, "forever", rows: 1, collected: collected)
        #expect(throws: QueryServerError.timeout(seconds: 0.7)) { try session.row(Self.row(1)) }
        session.close()
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(collected.pieces > 1)
        #expect(
            try server.show(try ddoc(Self.design), name: "this", doc: .null, request: try request()).object["body"]
                == "_design/r")
        #expect(server.workersStarted == 2)
    }

    @Test func aListThatSpinsBeforeItsFirstRowTimesOut() throws {
        let server = makeServer(timeout: .milliseconds(500), workers: 1)
        #expect(throws: QueryServerError.timeout(seconds: 0.5)) {
            _ = try list(server, "spin", rows: 1, collected: Collected())
        }
        #expect(
            try server.show(try ddoc(Self.design), name: "this", doc: .null, request: try request()).object["body"]
                == "_design/r")
    }

    @Test func aListAbandonedMidwayKillsItsWorker() throws {
        let server = makeServer(workers: 1)
        let session = try list(server, "ids", rows: 5, collected: Collected())
        try session.row(Self.row(1))
        session.close()  // the client went away
        #expect(
            try server.show(try ddoc(Self.design), name: "this", doc: .null, request: try request()).object["body"]
                == "_design/r")
        #expect(server.workersStarted == 2)
    }

    @Test func aListThatThrowsAfterRowsReportsItsError() throws {
        let server = makeServer(workers: 1)
        let session = try list(server, "throws", rows: 1, collected: Collected())
        do {
            try session.row(Self.row(1))
            Issue.record("the list did not fail")
        } catch let error as QueryServerError {
            #expect(error.error == "render_error")
            #expect(error.reason.hasPrefix("function raised error: Error: late"))
        }
        session.close()
        #expect(server.workersStarted == 1)  // a function's error leaves its worker usable
    }

    @Test func aListOfADesignDocumentTheWorkerEvictedIsSentItAgain() throws {
        let server = makeServer(workers: 1)
        for index in 0..<70 {
            let other = try ddoc(#"{"_id":"_design/o\#(index)","shows":{"s":"function() { return 's'; }"}}"#)
            _ = try server.show(other, name: "s", doc: .null, request: try request())
        }
        let collected = Collected()
        let session = try list(server, "ids", rows: 1, collected: collected)
        try session.row(Self.row(7))
        try session.finish()
        #expect(collected.text == "d7,end")
    }

    /// The attack of issue 35 (item 7): rows that each renewed the deadline let one list hold its worker for
    /// rows × `--js-timeout`. The list's deadline is the request's: rows trickled past it fail with the timeout.
    @Test func aListsRowsDoNotRenewItsDeadline() throws {
        let server = makeServer(timeout: .milliseconds(800), workers: 1)
        let session = try list(server, "ids", rows: 10, collected: Collected())
        var timedOut = false
        for id in 1...10 {
            do {
                try session.row(Self.row(id))
            } catch QueryServerError.timeout {
                timedOut = true
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        session.close()
        #expect(timedOut, "ten rows 0.2 s apart all passed a deadline of 0.8 s")
    }

    /// The attack of issue 35 (item 7): the lists of one database held every worker, so another database's
    /// `validate_doc_update` waited out its timeout for one (a 500). The lists of one database hold at most all workers but one.
    @Test func oneDatabasesListsLeaveAWorkerForTheOthers() throws {
        let server = makeServer(timeout: .milliseconds(1500), workers: 2)
        let held = try list(server, "ids", rows: 5, collected: Collected())
        defer { held.close() }
        // A second list of the same database waits for a worker of its share, and times out.
        #expect(throws: QueryServerError.timeout(seconds: 1.5)) {
            _ = try list(server, "ids", rows: 5, collected: Collected())
        }
        // Another database gets the worker left.
        let other = try JSON.parse(Self.design).objectValue ?? JSONObject()
        let elsewhere = DesignDocument(database: "other", id: "_design/r", rev: "1-a", body: other)
        let answer = try server.show(elsewhere, name: "this", doc: .null, request: try request())
        #expect(answer.object["body"] == "_design/r")
        // Once the first list ends, its database has its share again.
        held.close()
        let next = try list(server, "ids", rows: 1, collected: Collected())
        next.close()
    }

    /// A database whose name is a canonical twin of another's ("K" and the Kelvin sign) is another database to
    /// the share: the count goes by bytes.
    @Test func theShareCountsDatabasesByTheirBytes() throws {
        let server = makeServer(timeout: .milliseconds(1500), workers: 2)
        let body = try JSON.parse(Self.design).objectValue ?? JSONObject()
        let plain = DesignDocument(database: "Kdb", id: "_design/r", rev: "1-a", body: body)
        let twin = DesignDocument(database: "\u{212A}db", id: "_design/r", rev: "1-a", body: body)
        let held = try server.list(
            plain, name: "ids", head: try JSON.parse(#"{"total_rows":1}"#), request: try request()
        ) {
            _ in
        }
        defer { held.close() }
        let answer = try server.show(twin, name: "this", doc: .null, request: try request())
        #expect(answer.object["body"] == "_design/r")
    }
}
