import CouchWire
import Dispatch
import Foundation
import QueryServer
import Testing

/// Issue 29 item 1: the design functions of one database must not see, change or keep anything of another's.
/// The attack: a database admin of `a` writes a map function that replaces built-ins (`Function.prototype.apply`,
/// `Array.prototype.push`, `JSON.stringify`) and a global with spies stashing what they see; later a filter and a
/// `validate_doc_update` of database `b` run in the same worker; then `a`'s view is read again.
@Suite("Design documents run in their own environments", .serialized)
struct DesignIsolationTests {
    /// `a`'s map: installs the spies once, then emits everything they caught.
    static let spy = #"""
        function (doc) {
          var g = (function () { return this; })();
          if (!g.stash) {
            g.stash = [];
            var apply = Function.prototype.apply, push = Array.prototype.push, stringify = JSON.stringify;
            var note = function (what, value) {
              try { if (g.stash.length < 200) g.stash[g.stash.length] = what + ':' + stringify(value); } catch (e) {}
            };
            try {
              Function.prototype.apply = function (self, args) { note('apply', args); return apply.call(this, self, args); };
            } catch (e) {}
            try {
              Array.prototype.push = function () { note('push', arguments); return apply.call(push, this, arguments); };
            } catch (e) {}
            try { JSON.stringify = function (v) { note('stringify', v); return stringify(v); }; } catch (e) {}
            try { Object.defineProperty(Object.prototype, 'userCtx', { set: function (v) { note('set', v); } }); } catch (e) {}
            try { String.prototype.trim = function () { note('trim', String(this)); return this; }; } catch (e) {}
            leaked = 'planted by a';
          }
          emit(doc._id, g.stash.join('\n'));
        }
        """#

    /// `b`'s functions: pass only while every built-in they use is the engine's own and `a`'s global is absent.
    static let pristine = #"""
        (function () {
          var native = function (f) { return typeof f === 'function' && String(f).indexOf('[native code]') >= 0; };
          var list = [1];
          list.push(2);
          return native(Function.prototype.apply) && native(Array.prototype.push) && native(JSON.stringify)
            && native(String.prototype.trim) && typeof leaked === 'undefined' && list.length === 2
            && Object.getOwnPropertyDescriptor(Object.prototype, 'userCtx') === undefined;
        })()
        """#

    static let secrets = ["b-secret-doc", "b-secret-cookie", "b-secret-user", "b-secret-member"]

    func design(_ database: String, _ body: JSONObject, id: String = "_design/d") -> DesignDocument {
        DesignDocument(database: database, id: id, rev: "1-a", body: body)
    }

    func attacker() -> DesignDocument {
        design(
            "a",
            JSONObject([("views", .object(JSONObject([("v", .object(JSONObject([("map", .string(Self.spy))])))])))]))
    }

    func victim() -> DesignDocument {
        let check = Self.pristine.split(separator: "\n").joined(separator: " ")
        return design(
            "b",
            JSONObject([
                (
                    "filters",
                    .object(JSONObject([("f", .string("function (doc, req) { return \(check) && doc.n >= 0; }"))]))
                ),
                (
                    "validate_doc_update",
                    .string(
                        "function (newDoc, oldDoc, userCtx, secObj) { if (!(\(check))) throw {forbidden: 'tampered'}; }"
                    )
                ),
            ]))
    }

    func docs(_ database: String, count: Int) -> [JSON] {
        (0..<count).map { index in
            .object(JSONObject([("_id", .string("\(database)-\(index)")), ("n", .int(index)), ("s", "b-secret-doc")]))
        }
    }

    /// Runs the attack with `workers` workers; big batches are split over two workers and the validations run
    /// concurrently, so every worker runs `a`'s map, then `b`'s functions, then `a`'s map again.
    func attack(workers: Int) throws {
        let server = makeServer(workers: workers)
        let batch = 200
        let first = try server.map(attacker(), views: ["v"], docs: docs("a", count: batch))
        #expect(first.count == batch)

        let request = try JSON.parse(
            #"{"headers":{"Cookie":"AuthSession=b-secret-cookie"},"cookie":{"AuthSession":"b-secret-cookie"},"userCtx":{"db":"b","name":"b-secret-user","roles":[]},"secObj":{"members":{"names":["b-secret-member"]}}}"#
        )
        let verdicts = try server.filter(victim(), name: "f", docs: docs("b", count: batch), request: request)
        #expect(verdicts == Array(repeating: true, count: batch), "b's filter saw tampered built-ins")

        let userCtx = try JSON.parse(#"{"db":"b","name":"b-secret-user","roles":["b-secret-member"]}"#)
        let secObj = try JSON.parse(#"{"members":{"names":["b-secret-member"]}}"#)
        let items = docs("b", count: 3).map { ValidationItem(newDoc: $0, oldDoc: nil) }
        let outcomes = Mutex2<[ValidationOutcome]>([])
        DispatchQueue.concurrentPerform(iterations: 2 * workers) { _ in
            let result = (try? server.validate([victim()], items: items, userCtx: userCtx, secObj: secObj)) ?? []
            outcomes.append(result)
        }
        for result in outcomes.value {
            #expect(result == [.allowed, .allowed, .allowed], "b's validate_doc_update saw tampered built-ins")
        }

        let second = try server.map(attacker(), views: ["v"], docs: docs("a", count: batch))
        var seen = ""
        for perDoc in second {
            guard case .emitted(let rows)? = perDoc.first else { continue }
            for row in rows { seen += row.value.stringValue ?? "" }
        }
        for secret in Self.secrets {
            #expect(!seen.contains(secret), "a's view caught \(secret): \(seen.prefix(300))")
        }
        #expect(server.workersStarted == workers)
    }

    @Test func mapFunctionOfOneDatabaseCannotRedefineBuiltinsSeenByAnother() throws {
        try attack(workers: 1)
    }

    @Test func mapFunctionOfOneDatabaseCannotRedefineBuiltinsSeenByAnotherOnSeveralWorkers() throws {
        try attack(workers: 2)
    }

    @Test func builtinsAreFrozenBeforeAnyDesignFunctionRuns() throws {
        let server = makeServer(workers: 1)
        let strict = design(
            "a",
            JSONObject([
                (
                    "views",
                    .object(
                        JSONObject([
                            (
                                "v",
                                .object(
                                    JSONObject([
                                        (
                                            "map",
                                            "function (doc) { 'use strict'; Array.prototype.push = function () {}; emit(1, 1) }"
                                        )
                                    ]))
                            )
                        ]))
                )
            ]))
        let out = try server.map(strict, views: ["v"], docs: [.object(JSONObject())])
        guard case .failed(let error, _)? = out.first?.first else {
            Issue.record("a built-in was writable: \(out)")
            return
        }
        #expect(error == "TypeError")
    }

    @Test func twoDesignDocumentsOfOneDatabaseDoNotShareGlobals() throws {
        let server = makeServer(workers: 1)
        let writer = design(
            "a", JSONObject([("filters", .object(JSONObject([("f", "function () { shared = 42; return true }")])))]),
            id: "_design/w")
        let reader = design(
            "a",
            JSONObject([
                ("filters", .object(JSONObject([("f", "function () { return typeof shared === 'undefined' }")])))
            ]
            ), id: "_design/r")
        #expect(try server.filter(writer, name: "f", docs: [.null], request: .null) == [true])
        #expect(try server.filter(reader, name: "f", docs: [.null], request: .null) == [true])
    }

    @Test func reduceFunctionsOfOneDatabaseCannotReachAnothersReduce() throws {
        let server = makeServer(workers: 1)
        let evil =
            "function (keys, values) { stash = (typeof stash === 'undefined' ? [] : stash).concat(values); return stash.length }"
        let good = "function (keys, values) { return typeof stash === 'undefined' ? sum(values) : -1 }"
        let a = design("a", JSONObject([("views", .object(JSONObject()))]))
        let b = design("b", JSONObject([("views", .object(JSONObject()))]))
        #expect(try server.reduce(a, sources: [evil], keys: [.null], values: [.int(1)]) == [.int(1)])
        #expect(try server.reduce(b, sources: [good], keys: [.null], values: [.int(7)]) == [.int(7)])
        #expect(try server.reduce(a, sources: [evil], keys: [.null], values: [.int(2)]) == [.int(2)])
    }

    @Test func manyDesignDocumentsStayWithinTheWorkersEnvironmentBound() throws {
        var limits = WorkerLimits()
        limits.heapBytes = 48 * 1024 * 1024
        let server = makeServer(timeout: .seconds(20), workers: 1, limits: limits)
        for index in 0..<300 {
            let ddoc = design(
                "db\(index)",
                JSONObject([
                    ("filters", .object(JSONObject([("f", .string("function (doc) { return doc.n == \(index) }"))])))
                ]))
            let out = try server.filter(
                ddoc, name: "f", docs: [.object(JSONObject([("n", .int(index))]))], request: .null)
            #expect(out == [true], "ddoc \(index)")
        }
        #expect(server.workersStarted == 1)
    }
}

/// A lock-protected array for the concurrent validations.
final class Mutex2<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []

    init(_ items: [T]) { self.items = items }

    func append(_ item: T) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    var value: [T] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}
