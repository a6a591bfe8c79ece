import CouchWire
import Foundation
import QueryServer
import Testing

/// The `couchlite` executable next to the test bundle (SwiftPM builds both into the same directory).
func couchliteExecutable() -> String {
    if let explicit = ProcessInfo.processInfo.environment["COUCHLITE_BIN"] { return explicit }
    let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var directory = URL(fileURLWithPath: me).deletingLastPathComponent()
    // swift test runs `<bin>/couchlitePackageTests.xctest`, a file in the bin directory.
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("couchlite").path),
        directory.path != "/"
    {
        directory.deleteLastPathComponent()
    }
    return directory.appendingPathComponent("couchlite").path
}

func makeServer(timeout: Duration = .seconds(5), workers: Int = 2, limits: WorkerLimits = WorkerLimits())
    -> QueryServer
{
    QueryServer(
        QueryServerConfiguration(
            executable: couchliteExecutable(), maxWorkers: workers, timeout: timeout, limits: limits))
}

func ddoc(_ json: String, rev: String = "1-a") throws -> DesignDocument {
    let body = try JSON.parse(json).objectValue ?? JSONObject()
    return DesignDocument(database: "db", id: body["_id"]?.stringValue ?? "_design/d", rev: rev, body: body)
}

func docs(_ json: String) throws -> [JSON] { try JSON.parse(json).arrayValue ?? [] }

@Suite("Query server", .serialized)
struct QueryServerTests {
    /// A pool made with the defaults inside a test bundle must start `couchlite`, not the bundle: the bundle would
    /// run the whole test suite again as each "worker".
    @Test func defaultWorkerExecutableInATestBundleIsTheCouchliteBesideIt() {
        let executable = QueryServerConfiguration().executable
        #expect(!executable.hasSuffix(".xctest"))
        #expect(executable == couchliteExecutable() || ProcessInfo.processInfo.environment["COUCHLITE_BIN"] != nil)
        #expect(FileManager.default.isExecutableFile(atPath: executable))
    }

    @Test func filterSeesDocReqAndThis() throws {
        let server = makeServer()
        let design = try ddoc(
            #"{"_id":"_design/f","filters":{"x":"function(doc, req) { return doc.x == req.query.want && this._id == '_design/f' }"}}"#
        )
        let results = try server.filter(
            design, name: "x", docs: try docs(#"[{"x":"1"},{"x":"2"},{}]"#),
            request: try JSON.parse(#"{"query":{"want":"2"}}"#))
        #expect(results == [false, true, false])
    }

    @Test func bigBatchesKeepTheirOrderOverTwoWorkers() throws {
        let server = makeServer(workers: 2)
        let design = try ddoc(#"{"filters":{"m":"function(doc) { return doc.n % 3 == 0 }"}}"#)
        let batch = (0..<1000).map { JSON.object(JSONObject([("n", .int($0))])) }
        #expect(try server.filter(design, name: "m", docs: batch, request: .null) == (0..<1000).map { $0 % 3 == 0 })
        #expect(server.workersStarted == 2)
    }

    @Test func aWorkerKilledWhileIdleIsReplacedWithoutFailingTheCall() throws {
        let server = makeServer(workers: 1)
        let design = try ddoc(#"{"filters":{"t":"function() { return true }"}}"#)
        #expect(try server.filter(design, name: "t", docs: [.null], request: .null) == [true])
        #expect(server.workerPIDs.count == 1)
        for pid in server.workerPIDs { kill(pid, SIGKILL) }
        usleep(200_000)
        #expect(try server.filter(design, name: "t", docs: [.null], request: .null) == [true])
        #expect(server.workersStarted == 2)
    }

    @Test func mapEmitsPerDocAndPerView() throws {
        let server = makeServer()
        let design = try ddoc(
            #"{"views":{"a":{"map":"function(doc){ emit(doc._id, 1); emit([doc.n], null) }"},"b":{"map":"function(doc){ if (doc.n > 1) emit(doc.n); if (doc.bad) throw new TypeError('nope') }"},"lib":{"m":"exports.k = 7"}}}"#
        )
        let out = try server.map(
            design, views: ["a", "b"], docs: try docs(#"[{"_id":"x","n":1},{"_id":"y","n":2,"bad":true}]"#))
        #expect(out.count == 2)
        #expect(
            out[0][0]
                == .emitted([
                    MapRow(key: "x", value: .int(1)), MapRow(key: .array([.int(1)]), value: .null),
                ]))
        #expect(out[0][1] == .emitted([]))
        #expect(out[1][1] == .failed(error: "TypeError", reason: "nope"))
        let required = try ddoc(
            #"{"views":{"lib":{"m":"exports.k = 7"},"v":{"map":"function(doc){ emit(require('views/lib/m').k, null) }"}}}"#,
            rev: "2-b")
        #expect(
            try server.map(required, views: ["v"], docs: [.object(JSONObject())]) == [
                [.emitted([MapRow(key: .int(7), value: .null)])]
            ])
    }

    @Test func reduceAndRereduce() throws {
        let server = makeServer()
        let sum = "function(keys, values, rereduce) { return sum(values) + (rereduce ? 1000 : 0) }"
        let count = "function(keys, values) { return keys ? keys.length : -1 }"
        let keys: [JSON] = [.array(["a", "id1"]), .array(["b", "id2"])]
        #expect(
            try server.reduce(try ddoc("{}"), sources: [sum, count], keys: keys, values: [.int(2), .int(3)]) == [
                .int(5), .int(2),
            ])
        #expect(
            try server.rereduce(try ddoc("{}"), sources: [sum, count], values: [.int(5), .int(5)]) == [
                .int(1010), .int(-1),
            ])
    }

    @Test func validateOutcomes() throws {
        let server = makeServer()
        let design = try ddoc(
            #"{"validate_doc_update":"function(n, o, u, s) { if (n.f) throw {forbidden: 'no ' + n._id}; if (n.u) throw {unauthorized: u.name}; if (n.s) throw 'plain'; if (n.e) throw new Error('err'); if (n.o && o === null) throw {forbidden: 'old'}; if (n.sec && s.admins.names[0] != 'boss') throw {forbidden: 'sec'} }"}"#
        )
        let items = try docs(
            #"[{"_id":"a"},{"_id":"b","f":1},{"_id":"c","u":1},{"_id":"d","s":1},{"_id":"e","e":1},{"_id":"g","o":1},{"_id":"h","sec":1}]"#
        )
        .map { ValidationItem(newDoc: $0, oldDoc: nil) }
        let outcomes = try server.validate(
            [design], items: items, userCtx: try JSON.parse(#"{"db":"db","name":"bob","roles":[]}"#),
            secObj: try JSON.parse(#"{"admins":{"names":["boss"]}}"#))
        #expect(
            outcomes == [
                .allowed, .forbidden("no b"), .unauthorized("bob"), .failed(error: "unknown_error", reason: "plain"),
                .failed(error: "Error", reason: "err"), .forbidden("old"), .allowed,
            ])
    }

    @Test func requireLoadsCommonJSModulesRelativeToTheModule() throws {
        let server = makeServer()
        let design = try ddoc(
            #"{"lib":{"a":"var b = require('./b'); exports.v = b.v + 1","b":"exports.v = 41"},"filters":{"r":"function(doc){ return require('lib/a').v == 42 }"},"validate_doc_update":"function(){ require('lib/missing') }"}"#
        )
        #expect(
            try server.filter(design, name: "r", docs: [.object(JSONObject())], request: .object(JSONObject())) == [
                true
            ])
        let outcome = try server.validate(
            [design], items: [ValidationItem(newDoc: .object(JSONObject()), oldDoc: nil)], userCtx: .null, secObj: .null
        )
        guard case .failed(let error, _) = outcome.first else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error == "unknown_error")
    }

    @Test func compilationErrorsAreTyped() throws {
        let server = makeServer()
        let syntax = try ddoc(#"{"filters":{"s":"function(doc {","n":"42"}}"#)
        #expect(throws: QueryServerError.self) { try server.filter(syntax, name: "s", docs: [], request: .null) }
        do {
            _ = try server.filter(syntax, name: "n", docs: [], request: .null)
            Issue.record("a number compiled as a function")
        } catch {
            #expect(error == .compilation("Expression does not eval to a function. (42)"))
        }
    }

    @Test func throwingNonObjectsFailTheBatch() throws {
        let server = makeServer()
        for thrown in ["'text'", "42", "null", "undefined", "[1,2]", "{a: 1}", "new RangeError('r')"] {
            let design = try ddoc(#"{"filters":{"t":"function(){ throw \#(thrown) }"}}"#, rev: "1-\(thrown.count)")
            do {
                _ = try server.filter(design, name: "t", docs: [.null], request: .null)
                Issue.record("throw \(thrown) passed")
            } catch {
                guard case .function = error else {
                    Issue.record("throw \(thrown): \(error)")
                    continue
                }
            }
        }
        // The worker survived all of them.
        #expect(server.workersStarted <= 2)
    }

    @Test func unicodeSurvivesTheRoundTrip() throws {
        let server = makeServer()
        let design = try ddoc(
            #"{"views":{"v":{"map":"function(doc){ emit(doc.s, doc.s + '\ud83d\ude00' + '\u00e9') }"}}}"#)
        let out = try server.map(design, views: ["v"], docs: [.object(JSONObject([("s", "😀한")]))])
        #expect(out == [[.emitted([MapRow(key: "😀한", value: "😀한😀é")])]])
    }

    @Test func designDocumentsAreResentToAWorkerThatForgotThem() throws {
        let server = makeServer(workers: 1)
        // More design documents than a worker keeps (64): the first is evicted, then asked for again.
        for round in 0..<2 {
            for index in 0..<70 {
                let design = try ddoc(
                    #"{"filters":{"f":"function(doc){ return doc.n == \#(index) }"}}"#, rev: "1-\(index)")
                let out = try server.filter(
                    design, name: "f", docs: [.object(JSONObject([("n", .int(index))]))], request: .null)
                #expect(out == [true], "round \(round) ddoc \(index)")
            }
        }
    }
}
