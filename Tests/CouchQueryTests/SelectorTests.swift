import CouchWire
import Testing

@testable import CouchQuery

private func selector(_ text: String) throws -> Selector { try Selector(JSON.parse(text)) }

private func doc(_ text: String) throws -> JSON { try JSON.parse(text) }

private func reason(_ text: String) -> String? {
    do {
        _ = try Selector(JSON.parse(text, maxDepth: 10_000))
        return nil
    } catch let error as SelectorError {
        return error.reason
    } catch {
        return "unexpected \(error)"
    }
}

@Suite struct SelectorTests {
    let photo =
        #"{"_id":"p1","type":"photo","size":120,"ratio":1.5,"tags":["sea","sun"],"meta":{"camera":{"make":"Canon"},"iso":200},"owner":null,"public":true,"a.b":"dotted"}"#

    @Test func implicitEqualityMatchesScalarsAndRejectsOthers() throws {
        let d = try doc(photo)
        #expect(try selector(#"{"type":"photo"}"#).matches(d))
        #expect(!(try selector(#"{"type":"note"}"#).matches(d)))
        #expect(try selector(#"{"owner":null,"public":true}"#).matches(d))
        #expect(try selector(#"{"size":120.0}"#).matches(d))  // numbers compare by value
        #expect(try selector(#"{"tags":["sea","sun"]}"#).matches(d))  // arrays are compared whole
        #expect(!(try selector(#"{"tags":"sea"}"#).matches(d)))  // no MongoDB-style element match
    }

    @Test func emptySelectorMatchesEverything() throws {
        #expect(try selector("{}").matches(doc(photo)))
        #expect(try selector("{}").matches(doc("{}")))
    }

    @Test func nestedFieldsByObjectsAndDottedPaths() throws {
        let d = try doc(photo)
        #expect(try selector(#"{"meta":{"camera":{"make":"Canon"}}}"#).matches(d))
        #expect(try selector(#"{"meta.camera.make":"Canon"}"#).matches(d))
        #expect(try selector(#"{"meta":{"iso":{"$gte":100}}}"#).matches(d))
        #expect(try selector(#"{"meta.iso":{"$lt":100}}"#).matches(d) == false)
        #expect(try selector(#"{"a\\.b":"dotted"}"#).matches(d))  // escaped dot is a literal dot
        #expect(try selector(#"{"tags.1":"sun"}"#).matches(d))  // digits index arrays
        #expect(!(try selector(#"{"tags.5":"sun"}"#).matches(d)))
        #expect(try selector(#"{"meta.camera":{}}"#).matches(d) == false)  // `{}` under a field is equality with {}
        #expect(try selector(#"{"e":{}}"#).matches(doc(#"{"e":{}}"#)))
    }

    @Test func comparisonOperators() throws {
        let d = try doc(photo)
        #expect(try selector(#"{"size":{"$eq":120}}"#).matches(d))
        #expect(try selector(#"{"size":{"$ne":121}}"#).matches(d))
        #expect(try selector(#"{"size":{"$gt":119}}"#).matches(d))
        #expect(!(try selector(#"{"size":{"$gt":120}}"#).matches(d)))
        #expect(try selector(#"{"size":{"$gte":120}}"#).matches(d))
        #expect(try selector(#"{"size":{"$lt":1e3}}"#).matches(d))
        #expect(try selector(#"{"size":{"$lte":120,"$gte":120}}"#).matches(d))
        #expect(try selector(#"{"ratio":{"$gt":1,"$lt":2}}"#).matches(d))
        #expect(try selector(#"{"_id":{"$gt":"p0","$lt":"p2"}}"#).matches(d))
    }

    @Test func comparisonsAcrossTypesFollowCollationOrder() throws {
        // null < false < true < numbers < strings < arrays < objects
        let ordered = [
            #"null"#, #"false"#, #"true"#, #"-5"#, #"3.5"#, #""""#, #""a""#, #""b""#, #"[]"#, #"[1]"#, #"{}"#,
            #"{"a":1}"#,
        ]
        for (i, lower) in ordered.enumerated() {
            for higher in ordered[(i + 1)...] {
                let d = try doc("{\"v\":\(lower)}")
                #expect(try selector("{\"v\":{\"$lt\":\(higher)}}").matches(d), "\(lower) < \(higher)")
                #expect(!(try selector("{\"v\":{\"$gte\":\(higher)}}").matches(d)), "\(lower) >= \(higher)")
            }
        }
        // Strings in view collation (CouchDB's ICU order): "a" < "B", "é" with the e's; `_id` by bytes.
        #expect(try selector(#"{"v":{"$lt":"B"}}"#).matches(doc(#"{"v":"a"}"#)))
        #expect(try selector(#"{"v":{"$lt":"z"}}"#).matches(doc(#"{"v":"é"}"#)))
        #expect(try selector(#"{"_id":{"$lt":"a"}}"#).matches(doc(#"{"_id":"B"}"#)))
    }

    @Test func inAndNin() throws {
        let d = try doc(photo)
        #expect(try selector(#"{"type":{"$in":["note","photo"]}}"#).matches(d))
        #expect(!(try selector(#"{"type":{"$in":["note"]}}"#).matches(d)))
        #expect(try selector(#"{"type":{"$nin":["note"]}}"#).matches(d))
        #expect(!(try selector(#"{"type":{"$nin":["photo"]}}"#).matches(d)))
        // On an array field, $in tests its elements.
        #expect(try selector(#"{"tags":{"$in":["sun","x"]}}"#).matches(d))
        #expect(!(try selector(#"{"tags":{"$nin":["sun"]}}"#).matches(d)))
        #expect(try selector(#"{"tags":{"$nin":["moon"]}}"#).matches(d))
    }

    @Test func existsAndMissingFields() throws {
        let d = try doc(photo)
        #expect(try selector(#"{"owner":{"$exists":true}}"#).matches(d))  // present even though null
        #expect(!(try selector(#"{"missing":{"$exists":true}}"#).matches(d)))
        #expect(try selector(#"{"missing":{"$exists":false}}"#).matches(d))
        #expect(!(try selector(#"{"owner":{"$exists":false}}"#).matches(d)))
        // A missing field fails every other condition, even negative ones (CouchDB semantics).
        #expect(!(try selector(#"{"missing":{"$ne":1}}"#).matches(d)))
        #expect(!(try selector(#"{"missing":{"$nin":[1]}}"#).matches(d)))
        #expect(!(try selector(#"{"$not":{"missing":1}}"#).matches(d)))
        #expect(try selector(#"{"$not":{"missing":{"$exists":true}}}"#).matches(d))
        // A path through a scalar is a bad path, which fails even $exists:false.
        #expect(!(try selector(#"{"size.x":{"$exists":false}}"#).matches(d)))
        #expect(!(try selector(#"{"tags.x":{"$exists":false}}"#).matches(d)))
        #expect(try selector(#"{"meta.nothing":{"$exists":false}}"#).matches(d))
    }

    @Test func typeMismatchesDoNotMatchEqualityButOrder() throws {
        let d = try doc(#"{"n":"120","s":120}"#)
        #expect(!(try selector(#"{"n":120}"#).matches(d)))
        #expect(try selector(#"{"n":{"$gt":120}}"#).matches(d))  // strings sort after numbers
        #expect(try selector(#"{"s":{"$lt":"0"}}"#).matches(d))
        #expect(!(try selector(#"{"s":true}"#).matches(d)))
    }

    @Test func logicalOperators() throws {
        let d = try doc(photo)
        #expect(try selector(#"{"$and":[{"type":"photo"},{"size":{"$gt":100}}]}"#).matches(d))
        #expect(!(try selector(#"{"$and":[{"type":"photo"},{"size":{"$gt":200}}]}"#).matches(d)))
        #expect(try selector(#"{"$or":[{"type":"note"},{"size":120}]}"#).matches(d))
        #expect(!(try selector(#"{"$or":[{"type":"note"},{"size":1}]}"#).matches(d)))
        #expect(try selector(#"{"$nor":[{"type":"note"},{"size":1}]}"#).matches(d))
        #expect(!(try selector(#"{"$nor":[{"type":"photo"}]}"#).matches(d)))
        #expect(try selector(#"{"$not":{"type":"note"}}"#).matches(d))
        #expect(!(try selector(#"{"$not":{"type":"photo"}}"#).matches(d)))
        #expect(try selector(#"{"size":{"$not":{"$gt":200}}}"#).matches(d))
        #expect(try selector(#"{"$not":{"$not":{"type":"photo"}}}"#).matches(d))
        #expect(try selector(#"{"$not":{"$and":[{"type":"photo"},{"size":1}]}}"#).matches(d))
        #expect(!(try selector(#"{"$not":{"$or":[{"type":"photo"},{"size":1}]}}"#).matches(d)))
        #expect(try selector(#"{"size":{"$or":[{"$eq":1},{"$eq":120}]}}"#).matches(d))
        #expect(try selector(#"{"$and":[]}"#).matches(d))
        #expect(try selector(#"{"$or":[]}"#).matches(d))  // CouchDB: an empty $or is true
    }

    @Test(arguments: [
        (#"{"a":{"$regex":"("}}"#, "Bad argument for operator $regex: <<40>>"),
        (#"{"a":{"$elemMatch":1}}"#, "Bad argument for operator $elemMatch: 1"),
        (#"{"$where":"1"}"#, "Unsupported operator: $where"),
        (#"{"a":{"$bogus":1}}"#, "Invalid operator: $bogus"),
        (#"{"a":{"$in":1}}"#, "Bad argument for operator $in: 1"),
        (#"{"a":{"$exists":"yes"}}"#, "Bad argument for operator $exists: <<121,101,115>>"),
        (#"{"$and":{"a":1}}"#, "Bad argument for operator $and: {[{<<97>>,1}]}"),
        (#"{"a":{"$not":1}}"#, "Bad argument for operator $not: 1"),
        (#"{"a":{"$mod":[2.5,1]}}"#, "Bad argument for operator $mod: [2.5,1]"),
        (#"{"a":{"$size":-1}}"#, "Bad argument for operator $size: -1"),
        (#"{"$eq":1}"#, "One or more conditions is missing a field name."),
        (#"[]"#, "Selector must be a JSON object"),
    ])
    func unsupportedOrMalformedSelectorsAreRefused(text: String, expected: String) {
        #expect(reason(text) == expected)
    }

    @Test func deeplyNestedSelectorIsRefusedNotOverflowed() {
        let deep = String(repeating: #"{"$not":"#, count: 200) + #"{"a":1}"# + String(repeating: "}", count: 200)
        #expect(reason(deep) == "Selector is nested too deeply")
        let deepArgument =
            #"{"a":{"$eq":"# + String(repeating: "[", count: 200) + String(repeating: "]", count: 200) + "}}"
        #expect(reason(deepArgument) == "Selector is nested too deeply")
        let shallowArgument = #"{"a":{"$in":[[[1]],{"b":[2]}]}}"#
        #expect(reason(shallowArgument) == nil)
        #expect(Selector.nestingExceeds(.array([.array([])]), 1))
        #expect(!Selector.nestingExceeds(.array([.array([])]), 2))
    }

    @Test func fieldPathSplitting() {
        #expect(Selector.splitFieldPath("a.b.c") == ["a", "b", "c"])
        #expect(Selector.splitFieldPath(#"a\.b.c"#) == ["a.b", "c"])
        #expect(Selector.splitFieldPath("plain") == ["plain"])
        // As mango_util:parse_field: every backslash is dropped once the dots are found.
        #expect(Selector.splitFieldPath(#"\$foobar"#) == ["$foobar"])
        #expect(Selector.splitFieldPath(#"a\b"#) == ["ab"])
        #expect(Selector.splitFieldPath(#"a\\.b"#) == ["a.b"])  // the dot follows a backslash
        #expect(Selector.splitFieldPath(#"a\"#) == ["a"])
        #expect(Selector.splitFieldPath(#"\\\"#) == [""])
    }
}
